// The fused island over pull (src/kernels/fused_island_pull.cu): island_pull's legs by whole
// rows, each member owning a run, partners exchanging the fp32 partial, every rank normalising
// whole residual rows. Against the host reference in island order (fused_check.h: residual bit
// for bit, norm within an ulp, every rank's outputs identical) at worlds 4, 6 and 8 sharing the
// GPU (the islands: the first and second half of the ranks), runs of uneven length and empty
// runs, many steps (small slots), in place, FP8, Gemma, fp16/fp32, unaligned ranks, graphs; the
// same bits as the unfused push island (the island's all-reduce, then the epilogue kernel).
#include <gtest/gtest.h>

#include <cstdio>
#include <iterator>
#include <string>

#include "tests/gpu/fused_check.h"

namespace tpcomm::test {
namespace {

constexpr int kIslandPull = tpcommAlgoIslandPull;

void runIslandMatrix(int world, size_t buffer_bytes, bool light) {
  runFusedMatrix(world, kIslandPull, nullptr, buffer_bytes, light, "fused_p2p_island_pull");
}

// The default slots and 1 MiB ones (256 KiB outbox slots: 3 rows of 7168 bf16 a run at world 8,
// so 130 rows take 11 steps).
TEST(FusedIslandPull, World4OneStepAndManySteps) {
  runIslandMatrix(4, 0, false);
  runIslandMatrix(4, size_t{1} << 20, false);
}

TEST(FusedIslandPull, Worlds6And8SharingGpus) {
  for (int w : {6, 8}) {
    runIslandMatrix(w, 0, true);
    if (HasFailure()) return;
    runIslandMatrix(w, size_t{1} << 20, true);
    if (HasFailure()) return;
    printf("[ fused    ] world=%d island pull: passed\n", w);
  }
}

// The same inputs through the fused island and through the push island's unfused pair (beyond
// one step of the push one-shot: the island's all-reduce, then the epilogue kernel) give the same
// bits, residual, norm and FP8: both add in island order and round once, as FlashInfer does.
TEST(FusedIslandPull, SameBitsAsTheUnfusedIsland) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  struct Way {
    int algo;
    const char* variant;
  };
  const Way ways[] = {{kIslandPull, "fused_p2p_island_pull"}, {tpcommAlgoIsland, "add_rmsnorm"}};
  const FusedCase cases[] = {
      {{tpcommBfloat16, 700, 7168, 1e-6f, false, 0.f}},
      {{tpcommFloat16, 1200, 4096, 1e-5f, true, 0.f}},
      {{tpcommBfloat16, 700, 7168, 1e-6f, false, 0.05f}},
  };
  for (int w : {4, 8}) {
    std::vector<std::vector<FusedBits>> got(std::size(cases));
    for (const Way& way : ways) {
      tpcommConfig_t cfg = configFor(way.algo, 0, 5000);
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
    for (size_t i = 0; i < std::size(cases); ++i) {
      const std::string what = "world " + std::to_string(w) + " " +
                               nameOf(cases[i], kIslandPull, w) + ": against the unfused island";
      EXPECT_TRUE(got[i][1].residual == got[i][0].residual) << what << ": residual_out";
      EXPECT_TRUE(got[i][1].norm == got[i][0].norm) << what << ": the norm";
    }
  }
}

// Graphs: every replay the same bits as the eager call, on every rank, one step and many.
TEST(FusedIslandPull, GraphReplay) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (size_t t : {size_t{5}, size_t{300}}) {
    graphReplayMatches(kIslandPull, nullptr, t, 7168, 4);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace tpcomm::test
