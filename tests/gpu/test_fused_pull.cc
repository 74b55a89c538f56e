// The fused call over the pull wires (src/kernels/fused_pull.cu), where the fabric probe's
// write-collapse verdict (or a forced pull algorithm) makes the all-reduce pull: the LL entries
// and the flag per block, against the host reference (fused_check.h) at worlds 2..8 sharing the
// GPU, eager and in graphs; and one rounding on every path: the same inputs through every fused
// variant and the unfused pair give the same bits.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/gpu/fused_check.h"

namespace tpcomm::test {
namespace {

constexpr size_t kPullRowVecs = 1024;  // 512 threads x kFusedPullVecs (fused_oneshot.h)

// Hidden sizes engines run, at decode and small prefill token counts, over a pull algorithm with
// the given knobs. Rows longer than the pull kernel's registers (16384 bf16) go unfused.
void runPullMatrix(int world, int algo, const char* knobs, bool light) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  tpcommConfig_t cfg = configFor(algo, 0, 5000);
  cfg.launchKnobs = knobs;
  std::string err;
  auto g = makeGroup(world, &cfg, 0, &err);
  ASSERT_TRUE(g) << err;
  for (size_t h : {size_t{128}, size_t{4096}, size_t{7168}, size_t{8192}, size_t{16384}})
    for (size_t t : {size_t{1}, size_t{2}, size_t{4}, size_t{16}}) {
      if (light && t != 1 && t != 16) continue;
      const Path want = h * 2 / 16 > kPullRowVecs ? Path::kUnfused : Path::kFused;
      runFused(*g, algo, {{tpcommBfloat16, t, h, 1e-6f, false, 0.f}}, want);
      if (::testing::Test::HasFailure()) return;
    }
  const Path f = Path::kFused;
  runFused(*g, algo, {{tpcommFloat16, 4, 7168, 1e-5f, true, 0.f}}, f);
  runFused(*g, algo, {{tpcommFloat32, 2, 4096, 1e-6f, false, 0.f}}, f);
  runFused(*g, algo, {{tpcommBfloat16, 3, 7168, 1e-6f, false, 0.05f}}, f);
  runFused(*g, algo, {{tpcommBfloat16, 2, 7168, 1e-6f, false, 0.f}, true, true}, f);
  runFused(*g, algo, {{tpcommFloat16, 2, 6144, 1e-6f, true, 3.f}, true, false}, f);
  runFused(*g, algo, {{tpcommBfloat16, 2, 4096, 1e-6f, false, 0.f}, false, false, 4}, f);
}

// The variant every call of the matrix ran is a pull one (runFused checks it is the planned one).
void expectPullVariant(const char* knobs, int algo, const char* want) {
  tpcommConfig_t cfg = configFor(algo, 0, 5000);
  cfg.launchKnobs = knobs;
  std::string err;
  auto g = makeGroup(2, &cfg, 0, &err);
  ASSERT_TRUE(g) << err;
  FusedBits bits;
  runFused(*g, algo, {{tpcommBfloat16, 1, 7168, 1e-6f, false, 0.f}}, Path::kFused, Split::kAny,
           &bits);
  EXPECT_EQ(bits.variant, want) << knobs;
}

// LL entries: pull_ll_bytes at an LL slot's most (64 KiB: up to 4 rows of 7168 bf16), and the
// fused call allowed to take them (off by default: plan/knobs.h).
constexpr const char* kLL = "pull_ll_bytes=65536,fused_pull_ll=1";
// A flag per block: no LL entries.
constexpr const char* kFlag = "pull_ll_bytes=0";

TEST(FusedPull, World2LLAndFlag) {
  expectPullVariant(kLL, tpcommAlgoOneShotPull, "fused_p2p_oneshot_pull_ll");
  expectPullVariant(kFlag, tpcommAlgoOneShotPull, "fused_p2p_oneshot_pull");
  runPullMatrix(2, tpcommAlgoOneShotPull, kLL, false);
  runPullMatrix(2, tpcommAlgoOneShotPull, kFlag, false);
}

// The two-shot pull's calls fuse over the flag pull one-shot when they fit one step.
TEST(FusedPull, World2TwoShotPullFusesOverTheOneShot) {
  runPullMatrix(2, tpcommAlgoTwoShotPull, nullptr, true);
}

TEST(FusedPull, Worlds3To8SharingGpus) {
  for (int w = 3; w <= 8; ++w) {
    for (const char* knobs : {kLL, kFlag}) {
      runPullMatrix(w, tpcommAlgoOneShotPull, knobs, true);
      if (HasFailure()) return;
    }
    printf("[ fused    ] world=%d pull LL and flag: passed\n", w);
  }
}

// A graph of fused pull calls replayed: every replay the same bits as the eager call (the slots
// rotate by the epoch, the LL flags with it), on every rank.
TEST(FusedPull, GraphReplay) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (const char* knobs : {kLL, kFlag})
    for (size_t t : {size_t{1}, size_t{4}}) {
      graphReplayMatches(tpcommAlgoOneShotPull, knobs, t, 7168);
      if (HasFailure()) return;
    }
}

// One rounding on every path (tpcomm.h, tpcommAllReduceAddRmsNorm): the push one-shot, the pull
// LL and flag kernels, the pull two-shot (rows of 1..3 over 2 and 4 ranks: empty runs too), the
// host sentinel kernel and the unfused pairs (the all-reduce, then the epilogue kernel: over the
// copy engines' one-shot, and over host memory's LL one-shot, neither of which has a fused kernel)
// give the same bits for the same inputs, residual, norm and FP8 alike. Before, the fused kernels
// added the residual to the fp32 sum (one rounding) and the unfused pair to the sum rounded to T: 1
// ulp apart.
TEST(FusedPull, EveryPathGivesTheSameBits) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  struct Way {
    int algo;
    const char* knobs;
    const char* variant;  // what must run
  };
  const Way ways[] = {
      {tpcommAlgoAuto, nullptr, "fused_p2p_oneshot"},
      {tpcommAlgoOneShotCe, nullptr, "add_rmsnorm"},
      {tpcommAlgoHostOneShot, "host_sentinel=0", "add_rmsnorm"},
      {tpcommAlgoOneShotPull, kLL, "fused_p2p_oneshot_pull_ll"},
      {tpcommAlgoOneShotPull, kFlag, "fused_p2p_oneshot_pull"},
      {tpcommAlgoOneShotPull, "fused_twoshot_rows=1,pull_ll_bytes=0", "fused_p2p_twoshot_pull"},
      {tpcommAlgoTwoShot, "fused_twoshot_rows=1,fused_twoshot_push=1", "fused_p2p_twoshot"},
      {tpcommAlgoHostOneShot, nullptr, "fused_host_oneshot"},
  };
  const FusedCase cases[] = {
      {{tpcommBfloat16, 2, 7168, 1e-6f, false, 0.f}},
      {{tpcommFloat16, 3, 4096, 1e-5f, true, 0.f}},
      {{tpcommFloat32, 1, 2048, 1e-6f, false, 0.f}},
      {{tpcommBfloat16, 2, 7168, 1e-6f, false, 0.05f}},
  };
  for (int w : {2, 4}) {
    std::vector<std::vector<FusedBits>> got(std::size(cases));
    for (const Way& way : ways) {
      tpcommConfig_t cfg = configFor(way.algo, 0, 5000);
      cfg.launchKnobs = way.knobs;
      std::string err;
      auto g = makeGroup(w, &cfg, 0, &err);
      ASSERT_TRUE(g) << err;
      for (size_t i = 0; i < std::size(cases); ++i) {
        FusedBits b;
        runFused(*g, way.algo, cases[i], Path::kAny, Split::kAny, &b);
        const std::string want = std::string(way.variant) + (cases[i].rc.scale > 0 ? "_fp8" : "");
        EXPECT_EQ(b.variant, want) << "world " << w << " " << nameOf(cases[i], way.algo, w);
        got[i].push_back(b);
      }
      if (HasFailure()) return;
    }
    for (size_t i = 0; i < std::size(cases); ++i)
      for (size_t k = 1; k < got[i].size(); ++k) {
        const std::string what = "world " + std::to_string(w) + " " +
                                 nameOf(cases[i], ways[k].algo, w) + ": " + got[i][k].variant +
                                 " against " + got[i][0].variant;
        EXPECT_TRUE(got[i][k].residual == got[i][0].residual) << what << ": residual_out";
        EXPECT_TRUE(got[i][k].norm == got[i][0].norm) << what << ": the norm";
      }
  }
}

}  // namespace
}  // namespace tpcomm::test
