// The fused two-shot's push form (src/kernels/fused_twoshot_push.cu; its rule in
// src/plan/fused_plan.cc): where the all-reduce pushes over PCIe (no write-collapse verdict), fused
// calls of fused_twoshot_rows rows or more (twice that at two ranks) within one step of the push
// one-shot take it; beyond the step they run unfused, or with fused_twoshot_push=1 take it in as
// many steps as they need; over NVLink the pull form unless that knob says otherwise; a collapse
// never gets it (no push there); its slot holds an RS and an AG area per rank.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/fused_oneshot.h"
#include "kernels/layout/fused_twoshot_layout.h"
#include "kernels/runtime/variant_table.h"
#include "plan/fused_plan.h"
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

constexpr size_t kH = 7168, kHv = kH * 2 / 16;  // the rows, bf16

std::string what(int w, size_t t, const EpiloguePlan& e) {
  return "world " + std::to_string(w) + " T=" + std::to_string(t) + ": " +
         tpcommVariantName(e.variant) + " (" + e.reason + ")";
}

TEST(FusedTwoShotPushPlan, PciePushesTakeItFromTheKnobsRows) {
  for (int w = 2; w <= 8; ++w)
    for (size_t t : {size_t{1}, size_t{16}, size_t{63}, size_t{64}, size_t{127}, size_t{128}})
      for (bool fp8 : {false, true}) {
        const CallPlan p =
            planCall(factsFor(w, Fabric::kPcie), fusedCall(t, kH, tpcommBfloat16, fp8));
        if (variantRow(p.variant)->pull ||
            variantRow(p.variant)->transport != VariantTransport::kPeer)
          continue;  // NCCL's, or not a push: not this test's
        const EpiloguePlan& e = p.epilogue;
        const bool two = t >= (w == 2 ? 128u : 64u);
        if (two) {
          EXPECT_EQ(e.variant, fp8 ? tpcommVariantFusedP2pTwoShotFp8 : tpcommVariantFusedP2pTwoShot)
              << what(w, t, e);
          EXPECT_TRUE(e.one_pass) << what(w, t, e);
          EXPECT_NE(e.reason.find("by pushes, rows split"), std::string::npos) << e.reason;
          const FusedTwoShotSteps k = fusedRunSteps(e.region, kHv, w, 2 * w, t);
          ASSERT_GE(k.area_rows, 1u);
          EXPECT_LE(k.area_rows * kHv * 2 * w, e.region);
        } else {
          EXPECT_EQ(e.variant, fp8 ? tpcommVariantFusedP2pOneShotFp8 : tpcommVariantFusedP2pOneShot)
              << what(w, t, e);
        }
      }
}

// Beyond one step of the push one-shot the call runs unfused (measured faster than the push form
// there) unless fused_twoshot_push=1, which takes it in steps; NVLink keeps the pull form unless
// the knob says otherwise; a write collapse never pushes.
TEST(FusedTwoShotPushPlan, BeyondAStepNvlinkAndCollapse) {
  CommFacts f = factsFor(8, Fabric::kPcie, tpcommAlgoTwoShot);  // auto sends 14 MiB to NCCL
  EpiloguePlan e = planCall(f, fusedCall(1024, kH, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantAddRmsNorm) << e.reason;
  EXPECT_NE(e.reason.find("exceed one step"), std::string::npos) << e.reason;
  f.knobs.fused_twoshot_push = true;
  e = planCall(f, fusedCall(1024, kH, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantFusedP2pTwoShot) << e.reason;
  EXPECT_GT(fusedRunSteps(e.region, kHv, 8, 16, 1024).nsteps, 1u) << e.reason;
  for (int w : {2, 4, 8}) {
    CommFacts n = factsFor(w, Fabric::kNvlink);
    e = planCall(n, fusedCall(256, kH, tpcommBfloat16, false)).epilogue;
    EXPECT_EQ(e.variant, tpcommVariantFusedP2pTwoShotPull) << what(w, 256, e);
    n.knobs.fused_twoshot_push = true;
    e = planCall(n, fusedCall(256, kH, tpcommBfloat16, false)).epilogue;
    EXPECT_EQ(e.variant, tpcommVariantFusedP2pTwoShot) << what(w, 256, e);
    // Forced by name on one GPU (an NVLink fabric to the planner): the knob's option reaches it.
    CommFacts g = factsFor(w, Fabric::kNvlink);
    g.knobs.variant = tpcommVariantFusedP2pTwoShot;
    e = planCall(g, fusedCall(3, 4096, tpcommBfloat16, false)).epilogue;
    EXPECT_EQ(e.variant, tpcommVariantFusedP2pTwoShot) << what(w, 3, e);
    EXPECT_EQ(e.reason.rfind("variant=", 0), 0u) << e.reason;
  }
  for (int w = 2; w <= 8; ++w) {
    CommFacts c = factsFor(w, Fabric::kPcie);
    c.fabric_verdict = FabricVerdict::kWriteCollapse;
    c.knobs.fused_twoshot_push = true;
    for (size_t t : {size_t{64}, size_t{256}}) {
      e = planCall(c, fusedCall(t, kH, tpcommBfloat16, false)).epilogue;
      EXPECT_NE(e.variant, tpcommVariantFusedP2pTwoShot) << what(w, t, e);
      EXPECT_NE(e.variant, tpcommVariantFusedP2pOneShot) << what(w, t, e);
    }
  }
}

TEST(FusedTwoShotPushPlan, EveryWorldHasItsOnePassKernel) {
  for (tpcommVariant_t v : {tpcommVariantFusedP2pTwoShot, tpcommVariantFusedP2pTwoShotFp8})
    for (int w = 2; w <= 8; ++w)
      for (int d = 0; d < kNumDtypes; ++d) {
        EXPECT_NE(variantKernel(v, w, d), nullptr) << tpcommVariantName(v) << " world " << w;
        EXPECT_EQ(variantOnePassKernel(v, w, d), variantKernel(v, w, d)) << tpcommVariantName(v);
        EXPECT_EQ(variantClusterKernel(v, w, d), nullptr) << tpcommVariantName(v);
      }
}

// The push form takes calls up to exactly one step of the push one-shot (4 MiB at four ranks of
// 16 MiB slots); a row more runs unfused.
TEST(FusedTwoShotPushPlan, TakesACallOfExactlyOneStep) {
  const CommFacts f = factsFor(4, Fabric::kPcie);
  ASSERT_EQ(f.slots.oneshot_step_bytes, size_t{4} << 20);
  const size_t rows = f.slots.oneshot_step_bytes / (4096 * 2);  // 512 rows of 4096 bf16
  EpiloguePlan e = planCall(f, fusedCall(rows, 4096, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantFusedP2pTwoShot) << what(4, rows, e);
  e = planCall(f, fusedCall(rows + 1, 4096, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantAddRmsNorm) << what(4, rows + 1, e);
}

}  // namespace
}  // namespace tpcomm
