// The planner's answer for tpcommAllReduceAddRmsNorm (src/plan/fused_plan.cc): the fused one-shot
// over the all-reduce's transport where the whole call is one step of whole-vector rows, the
// all-reduce then the epilogue kernel elsewhere, with the reason; every variant it names has its
// kernels in the variant table (so the start-up image check covers them).
#include <gtest/gtest.h>

#include <string>

#include "kernels/algo_launch.h"
#include "kernels/variant_table.h"
#include "plan/fused_plan.h"
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

struct Row {
  int world;
  Fabric fabric;
  size_t rows, hidden;
  tpcommDataType_t dt;
  bool aligned, fp8;
  tpcommVariant_t want;
};

TEST(FusedPlan, FusedWhereOneStepOfWholeRowsElseUnfused) {
  const Row cases[] = {
      // One 7168-wide bf16 row (14 KiB) and prefill-sized calls up to a step (8 MiB at world 2).
      {2, Fabric::kNvlink, 1, 7168, tpcommBfloat16, true, false, tpcommVariantFusedP2pOneShot},
      {2, Fabric::kNvlink, 256, 16384, tpcommBfloat16, true, false, tpcommVariantFusedP2pOneShot},
      {2, Fabric::kNvlink, 16, 7168, tpcommBfloat16, true, true, tpcommVariantFusedP2pOneShotFp8},
      {8, Fabric::kPcie, 4, 4096, tpcommFloat16, true, false, tpcommVariantFusedP2pOneShot},
      // Beyond one step (the region is 8 MiB at world 2, 2 MiB at world 8): unfused.
      {2, Fabric::kNvlink, 257, 16384, tpcommBfloat16, true, false, tpcommVariantAddRmsNorm},
      {8, Fabric::kNvlink, 256, 8192, tpcommBfloat16, true, true, tpcommVariantAddRmsNormFp8},
      // Rows that are not whole vectors, or unaligned buffers: unfused.
      {2, Fabric::kNvlink, 3, 1001, tpcommBfloat16, true, false, tpcommVariantAddRmsNorm},
      {2, Fabric::kNvlink, 3, 7168, tpcommBfloat16, false, false, tpcommVariantAddRmsNorm},
      {2, Fabric::kNvlink, 3, 6, tpcommFloat32, true, false, tpcommVariantAddRmsNorm},
      // Host memory: the host sentinel protocol's one step (512 KiB at world 2).
      {2, Fabric::kHost, 16, 7168, tpcommBfloat16, true, false, tpcommVariantFusedHostOneShot},
      {2, Fabric::kHost, 4, 7168, tpcommBfloat16, true, true, tpcommVariantFusedHostOneShotFp8},
      {2, Fabric::kHost, 64, 7168, tpcommBfloat16, true, false, tpcommVariantAddRmsNorm},
  };
  for (const Row& r : cases) {
    const CommFacts f = factsFor(r.world, r.fabric);
    const FusedPlan p = planFusedCall(f, FusedCallArgs{r.rows, r.hidden, r.dt, r.aligned, r.fp8});
    const std::string what = "world " + std::to_string(r.world) + " " + std::to_string(r.rows) +
                             "x" + std::to_string(r.hidden) + ": " + p.reason;
    EXPECT_EQ(p.variant, r.want) << what;
    EXPECT_EQ(isFusedVariant(p.variant), p.reason.rfind("fused one-shot", 0) == 0) << what;
    if (isFusedVariant(p.variant)) {
      EXPECT_GE(p.blocks, 1) << what;
      EXPECT_LE(static_cast<size_t>(p.blocks), r.rows) << what;
      EXPECT_GE(p.threads, 32) << what;
      EXPECT_LE(p.threads, kThreadsPerBlock) << what;
      EXPECT_EQ(p.threads % 32, 0) << what;
      EXPECT_GT(p.region, 0u) << what;
      // The whole call fits one source's region.
      EXPECT_LE(r.rows * r.hidden * (r.dt == tpcommFloat32 ? 4 : 2), p.region * kVecBytes);
    } else {
      EXPECT_EQ(p.reason.rfind("unfused: ", 0), 0u) << what;
      EXPECT_NE(p.reason.find(tpcommVariantName(p.ar.variant)), std::string::npos) << what;
    }
  }
}

TEST(FusedPlan, GridFollowsTheRowsAndTheBlockCap) {
  CommFacts f = factsFor(2, Fabric::kNvlink);
  FusedPlan p = planFusedCall(f, FusedCallArgs{1, 7168, tpcommBfloat16, true, false});
  EXPECT_EQ(p.blocks, 1);
  EXPECT_EQ(p.threads, 512);  // 896 vectors: two per thread
  p = planFusedCall(f, FusedCallArgs{4, 128, tpcommBfloat16, true, false});
  EXPECT_EQ(p.blocks, 4);
  EXPECT_EQ(p.threads, 32);  // 16 vectors a row
  p = planFusedCall(f, FusedCallArgs{256, 4096, tpcommBfloat16, true, false});
  EXPECT_EQ(p.blocks, 128);  // kDefaultMaxBlocks: the blocks loop over the rows beyond it
  f.knobs.max_blocks = 8;
  p = planFusedCall(f, FusedCallArgs{256, 4096, tpcommBfloat16, true, false});
  EXPECT_EQ(p.blocks, 8);
  // Ranks sharing a GPU: capped by occupancy (test_co_residency.cc).
}

TEST(FusedPlan, NcclServedAllReduceStaysUnfusedAndErrorsPropagate) {
  CommFacts f = factsFor(2, Fabric::kNvlink, tpcommAlgoNccl);
  FusedPlan p = planFusedCall(f, FusedCallArgs{1, 7168, tpcommBfloat16, true, false});
  EXPECT_EQ(p.ar.variant, tpcommVariantNccl);
  EXPECT_EQ(p.variant, tpcommVariantAddRmsNorm) << p.reason;
  EXPECT_NE(p.reason.find("nccl"), std::string::npos) << p.reason;
  f.nccl_available = false;
  p = planFusedCall(f, FusedCallArgs{1, 7168, tpcommBfloat16, true, false});
  EXPECT_NE(p.ar.decision.error, tpcommSuccess);
  EXPECT_EQ(p.variant, tpcommVariantNone);
}

TEST(FusedPlan, EveryVariantItNamesHasKernels) {
  for (tpcommVariant_t v : {tpcommVariantFusedP2pOneShot, tpcommVariantFusedP2pOneShotFp8,
                            tpcommVariantFusedHostOneShot, tpcommVariantFusedHostOneShotFp8,
                            tpcommVariantAddRmsNorm, tpcommVariantAddRmsNormFp8})
    for (int w : kWorldClasses)
      for (int d = 0; d < kNumDtypes; ++d)
        EXPECT_NE(variantKernel(v, w, d), nullptr) << tpcommVariantName(v) << " world " << w;
}

}  // namespace
}  // namespace tpcomm
