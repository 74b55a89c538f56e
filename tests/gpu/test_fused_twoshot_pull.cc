// The fused two-shot over pull (src/kernels/fused_twoshot_pull.cu): rows split among the ranks,
// each owner sums, adds and normalises its run and the others read its residual rows and
// normalise them themselves. Against the host reference (fused_check.h: residual bit for bit,
// norm within an ulp, every rank's outputs identical) at worlds 2..8 sharing the GPU, runs of
// uneven length and empty runs (fewer rows than ranks), many steps (small slots), in place, FP8,
// Gemma, unaligned ranks, and graphs; the planner's default takes it from 64 rows where the
// all-reduce pulls.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/gpu/fused_check.h"

namespace tpcomm::test {
namespace {

// Every fused call over pull takes the two-shot, from one row (the knob; no LL entries).
constexpr const char* kTwoShot = "fused_twoshot_rows=1,pull_ll_bytes=0";

void runTwoShotMatrix(int world, size_t buffer_bytes, bool light) {
  runFusedMatrix(world, tpcommAlgoOneShotPull, kTwoShot, buffer_bytes, light,
                 "fused_p2p_twoshot_pull");
}

// The default slots (one step for every case here) and 1 MiB ones (256 KiB outbox slots: 9 rows
// of 7168 bf16 a run, so 130 rows take 8 steps at two ranks).
TEST(FusedTwoShotPull, World2OneStepAndManySteps) {
  runTwoShotMatrix(2, 0, false);
  runTwoShotMatrix(2, size_t{1} << 20, false);
}

TEST(FusedTwoShotPull, Worlds3To8SharingGpus) {
  for (int w = 3; w <= 8; ++w) {
    runTwoShotMatrix(w, w % 2 ? size_t{1} << 20 : 0, true);
    if (HasFailure()) return;
    printf("[ fused    ] world=%d two-shot pull: passed\n", w);
  }
}

// The planner's default: where the all-reduce pulls, 64 rows and more take the two-shot, fewer
// the one-shot (plan/knobs.h, fused_twoshot_rows).
TEST(FusedTwoShotPull, DefaultTakesItFrom64Rows) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  tpcommConfig_t cfg = configFor(tpcommAlgoOneShotPull, 0, 5000);
  cfg.launchKnobs = "pull_ll_bytes=0";
  std::string err;
  auto g = makeGroup(4, &cfg, 0, &err);
  ASSERT_TRUE(g) << err;
  for (size_t t : {size_t{63}, size_t{64}}) {
    FusedBits bits;
    runFused(*g, tpcommAlgoOneShotPull, {{tpcommBfloat16, t, 7168, 1e-6f, false, 0.f}},
             Path::kFused, Split::kAny, &bits);
    EXPECT_EQ(bits.variant, t >= 64 ? "fused_p2p_twoshot_pull" : "fused_p2p_oneshot_pull");
  }
}

// Graphs: every replay the same bits as the eager call, on every rank, one step and many.
TEST(FusedTwoShotPull, GraphReplay) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (size_t t : {size_t{5}, size_t{64}}) {
    graphReplayMatches(tpcommAlgoOneShotPull, kTwoShot, t, 7168);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace tpcomm::test
