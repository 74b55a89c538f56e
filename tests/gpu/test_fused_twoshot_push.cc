// The fused two-shot's push form (src/kernels/fused_twoshot_push.cu): rows split among the ranks,
// each rank pushing its input of the others' runs into their slots, each owner summing, adding
// and normalising its run and pushing the residual rows back, every rank normalising the others'.
// Forced on one GPU (an NVLink fabric to the planner) by fused_twoshot_push=1 where the all-reduce
// pushes. Against the host reference (fused_check.h: residual bit for bit, norm within an ulp,
// every rank's outputs identical) at worlds 2..8 sharing the GPU, runs of uneven length and empty
// runs, many steps (small slots), in place, FP8, Gemma, unaligned ranks, and graphs.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/gpu/fused_check.h"

namespace tpcomm::test {
namespace {

// Every fused call where the all-reduce pushes takes the push two-shot, from one row.
constexpr const char* kPushForm = "fused_twoshot_rows=1,fused_twoshot_push=1";
constexpr int kPushAlgo = tpcommAlgoTwoShot;

void runPushMatrix(int world, size_t buffer_bytes, bool light) {
  runFusedMatrix(world, kPushAlgo, kPushForm, buffer_bytes, light, "fused_p2p_twoshot");
}

// The default slots (one step for every case here) and 1 MiB ones (4 areas of 16 KiB at two
// ranks: 130 rows of 7168 bf16 take many steps).
TEST(FusedTwoShotPush, World2OneStepAndManySteps) {
  runPushMatrix(2, 0, false);
  runPushMatrix(2, size_t{1} << 20, false);
}

TEST(FusedTwoShotPush, Worlds3To8SharingGpus) {
  for (int w = 3; w <= 8; ++w) {
    runPushMatrix(w, w % 2 ? size_t{1} << 20 : 0, true);
    if (HasFailure()) return;
    printf("[ fused    ] world=%d two-shot push: passed\n", w);
  }
}

// Graphs: every replay the same bits as the eager call, on every rank, one step and many.
TEST(FusedTwoShotPush, GraphReplay) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (size_t t : {size_t{5}, size_t{300}}) {
    graphReplayMatches(kPushAlgo, kPushForm, t, 7168);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace tpcomm::test
