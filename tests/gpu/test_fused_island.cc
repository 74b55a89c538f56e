// The fused islands: over pull (src/kernels/fused_island_pull.cu, the island_pull legs) and over
// pushes (src/kernels/fused_twoshot_push.cu, the push island's legs), by whole rows, each member
// owning a run, partners exchanging the fp32 partial, every rank normalising whole residual rows.
// Against the host reference in island order (fused_check.h: residual bit for bit, norm within an
// ulp, every rank's outputs identical) at worlds 4, 6 and 8 sharing the GPU (the islands: the
// first and second half of the ranks), runs of uneven length and empty runs, many steps (small
// slots), in place, FP8, Gemma, fp16/fp32, unaligned ranks, graphs; the same bits as each other
// and as the unfused push island (the island's all-reduce, then the epilogue kernel).
#include <gtest/gtest.h>

#include <cstdio>
#include <iterator>
#include <string>

#include "tests/gpu/fused_check.h"

namespace tpcomm::test {
namespace {

struct Form {
  int algo;
  const char* variant;
};
constexpr Form kForms[] = {{tpcommAlgoIslandPull, "fused_p2p_island_pull"},
                           {tpcommAlgoIsland, "fused_p2p_island"}};

void runIslandMatrix(int world, size_t buffer_bytes, bool light) {
  for (const Form& f : kForms) {
    runFusedMatrix(world, f.algo, nullptr, buffer_bytes, light, f.variant);
    if (::testing::Test::HasFailure()) return;
  }
}

// The default slots and 1 MiB ones (256 KiB slots: 3 rows of 7168 bf16 a run at world 8 over
// pull, 130 rows in 11 steps; the push island's 2m + 2 areas take more).
TEST(FusedIsland, World4OneStepAndManySteps) {
  runIslandMatrix(4, 0, false);
  runIslandMatrix(4, size_t{1} << 20, false);
}

TEST(FusedIsland, Worlds6And8SharingGpus) {
  for (int w : {6, 8}) {
    runIslandMatrix(w, 0, true);
    if (HasFailure()) return;
    runIslandMatrix(w, size_t{1} << 20, true);
    if (HasFailure()) return;
    printf("[ fused    ] world=%d islands, pull and push: passed\n", w);
  }
}

// The same inputs through both fused islands and through the push island's unfused pair (the
// island's all-reduce, then the epilogue kernel: variant=add_rmsnorm) give the same bits,
// residual, norm and FP8: all add in island order and round once, as FlashInfer does.
TEST(FusedIsland, SameBitsAsTheUnfusedIsland) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  struct Way {
    int algo;
    const char* knobs;
    const char* knobs_fp8;  // a forced row is one kernel: the pair's FP8 epilogue is its own
    const char* variant;
  };
  const Way ways[] = {
      {tpcommAlgoIsland, "variant=add_rmsnorm", "variant=add_rmsnorm_fp8", "add_rmsnorm"},
      {kForms[0].algo, nullptr, nullptr, kForms[0].variant},
      {kForms[1].algo, nullptr, nullptr, kForms[1].variant}};
  const FusedCase cases[] = {
      {{tpcommBfloat16, 700, 7168, 1e-6f, false, 0.f}},
      {{tpcommFloat16, 1200, 4096, 1e-5f, true, 0.f}},
      {{tpcommBfloat16, 700, 7168, 1e-6f, false, 0.05f}},
      {{tpcommBfloat16, 3, 7168, 1e-6f, false, 0.f}},
  };
  for (int w : {4, 8}) {
    std::vector<std::vector<FusedBits>> got(std::size(cases));
    for (const Way& way : ways)
      for (bool fp8 : {false, true}) {
        tpcommConfig_t cfg = configFor(way.algo, 0, 5000);
        cfg.launchKnobs = fp8 ? way.knobs_fp8 : way.knobs;
        std::string err;
        auto g = makeGroup(w, &cfg, 0, &err);
        ASSERT_TRUE(g) << err;
        for (size_t i = 0; i < std::size(cases); ++i) {
          if ((cases[i].rc.scale > 0) != fp8) continue;
          FusedBits b;
          runFused(*g, way.algo, cases[i], Path::kAny, Split::kAny, &b);
          const std::string want = std::string(way.variant) + (fp8 ? "_fp8" : "");
          EXPECT_EQ(b.variant, want) << "world " << w << " " << nameOf(cases[i], way.algo, w);
          got[i].push_back(b);
        }
        if (HasFailure()) return;
      }
    for (size_t i = 0; i < std::size(cases); ++i)
      for (size_t k = 1; k < std::size(ways); ++k) {
        const std::string what = "world " + std::to_string(w) + " " +
                                 nameOf(cases[i], ways[k].algo, w) + ": " + ways[k].variant +
                                 " against the unfused island";
        EXPECT_TRUE(got[i][k].residual == got[i][0].residual) << what << ": residual_out";
        EXPECT_TRUE(got[i][k].norm == got[i][0].norm) << what << ": the norm";
      }
  }
}

// Graphs: every replay the same bits as the eager call, on every rank, one step and many.
TEST(FusedIsland, GraphReplay) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (const Form& f : kForms)
    for (size_t t : {size_t{5}, size_t{300}}) {
      graphReplayMatches(f.algo, nullptr, t, 7168, 4);
      if (HasFailure()) return;
    }
}

}  // namespace
}  // namespace tpcomm::test
