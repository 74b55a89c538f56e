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
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  tpcommConfig_t cfg = configFor(kPushAlgo, 0, 5000);
  cfg.launchKnobs = kPushForm;
  cfg.bufferBytes = buffer_bytes;
  std::string err;
  auto g = makeGroup(world, &cfg, 0, &err);
  ASSERT_TRUE(g) << err;
  const Path f = Path::kFused;
  for (size_t h : {size_t{128}, size_t{4096}, size_t{7168}})
    for (size_t t : {size_t{1}, size_t{3}, size_t{17}, size_t{64}, size_t{130}}) {
      if (light && t != 3 && t != 130) continue;
      FusedBits bits;
      runFused(*g, kPushAlgo, {{tpcommBfloat16, t, h, 1e-6f, false, 0.f}}, f, Split::kAny, &bits);
      EXPECT_EQ(bits.variant, "fused_p2p_twoshot") << "world " << world << " T=" << t;
      if (::testing::Test::HasFailure()) return;
    }
  runFused(*g, kPushAlgo, {{tpcommFloat16, 9, 7168, 1e-5f, true, 0.f}}, f);
  runFused(*g, kPushAlgo, {{tpcommFloat32, 20, 4096, 1e-6f, false, 0.f}}, f);
  runFused(*g, kPushAlgo, {{tpcommBfloat16, 33, 7168, 1e-6f, false, 0.05f}}, f);
  runFused(*g, kPushAlgo, {{tpcommBfloat16, 12, 7168, 1e-6f, false, 0.f}, true, true}, f);
  runFused(*g, kPushAlgo, {{tpcommFloat16, 10, 6144, 1e-6f, true, 3.f}, true, false}, f);
  runFused(*g, kPushAlgo, {{tpcommBfloat16, 70, 4096, 1e-6f, false, 0.f}, false, false, 4}, f);
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
