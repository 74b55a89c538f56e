// The fused call where the all-reduce pulls (src/plan/fused_plan.cc, src/kernels/fused_pull.cu):
// under the fabric probe's write-collapse verdict the fused call keeps its one kernel, over the
// pull wire the all-reduce of the same bytes takes (LL entries where it takes them, else a flag
// per block), and never turns into a push.
#include <gtest/gtest.h>

#include <string>

#include "kernels/fused_oneshot.h"
#include "kernels/runtime/variant_table.h"
#include "plan/fused_plan.h"
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

CommFacts collapsed(int world, bool islands = false) {
  CommFacts f = factsFor(world, Fabric::kPcie);
  f.fabric_verdict = FabricVerdict::kWriteCollapse;
  f.two_islands = islands;
  return f;
}

bool pulls(tpcommVariant_t v) {
  const VariantRow* r = variantRow(v);
  return r && r->pull && r->transport == VariantTransport::kPeer;
}

// The box: 8 PCIe GPUs behind switches whose peer stores collapse; decode (T = 1..16)
// at H = 7168 and 4096, worlds 2..8: a fused pull variant every time, FP8 alike. The flag wire by
// knob fused_pull_ll=0; by default, the LL entries where the all-reduce takes them (up to
// pull_ll_bytes, 16 KiB: one 7168 row).
TEST(FusedPullPlan, WriteCollapseFusesOverPull) {
  for (bool fused_ll : {false, true})
    for (int w = 2; w <= 8; ++w)
      for (size_t h : {size_t{7168}, size_t{4096}})
        for (size_t t = 1; t <= 16; ++t)
          for (bool fp8 : {false, true}) {
            CommFacts f = collapsed(w);
            f.knobs.fused_pull_ll = fused_ll;
            const CallPlan p = planCall(f, fusedCall(t, h, tpcommBfloat16, fp8));
            const EpiloguePlan& e = p.epilogue;
            const std::string what = "world " + std::to_string(w) + " T=" + std::to_string(t) +
                                     " H=" + std::to_string(h) + (fp8 ? " fp8" : "") + ": " +
                                     tpcommVariantName(e.variant) + " (" + e.reason + ")";
            ASSERT_TRUE(isFusedVariant(e.variant)) << what;
            EXPECT_TRUE(pulls(e.variant)) << what;
            EXPECT_TRUE(pulls(p.variant)) << what << "; the all-reduce: " << p.decision.reason;
            const bool ll = fused_ll && p.variant == tpcommVariantP2pOneShotPullLL;
            const tpcommVariant_t want =
                ll ? (fp8 ? tpcommVariantFusedP2pOneShotPullLLFp8
                          : tpcommVariantFusedP2pOneShotPullLL)
                   : (fp8 ? tpcommVariantFusedP2pOneShotPullFp8 : tpcommVariantFusedP2pOneShotPull);
            EXPECT_EQ(e.variant, want) << what;
            EXPECT_EQ(p.variant == tpcommVariantP2pOneShotPullLL, t * h * 2 <= 16384u) << what;
            EXPECT_TRUE(e.one_pass) << what;  // the pull kernels have no second pass
            EXPECT_EQ(e.cluster, 1) << what;
            // A block a row, and over LL entries one more that checks the fingerprints
            // (fused_pull.cu; the flag wire's checker is block 0's last thread).
            EXPECT_EQ(e.check_block, ll) << what;
            EXPECT_EQ(e.blocks, static_cast<int>(t) + (ll ? 1 : 0)) << what;
            EXPECT_NE(e.reason.find("by pulls"), std::string::npos) << what;
          }
}

// With real islands the all-reduce of these sizes pulls too (twoshot_pull or the one-shot pull;
// island_pull for large messages): the fused call takes the flag pull one-shot within a step.
TEST(FusedPullPlan, IslandsFuseOverPullWithinAStep) {
  for (size_t t : {size_t{1}, size_t{16}, size_t{64}}) {
    const CallPlan p = planCall(collapsed(8, true), fusedCall(t, 7168, tpcommBfloat16, false));
    EXPECT_TRUE(pulls(p.variant)) << p.decision.reason;
    EXPECT_TRUE(isFusedVariant(p.epilogue.variant) && pulls(p.epilogue.variant))
        << t << " rows: " << p.epilogue.reason;
  }
}

// What the pull kernels cannot take goes unfused, and says why: rows longer than their registers
// (16384 bf16: 2048 vectors against 512 x 2), rows that are not whole vectors, calls beyond one
// step of the outbox slot (4 MiB here).
TEST(FusedPullPlan, UnfusedWhereThePullKernelCannotAndSaysWhy) {
  const CommFacts f = collapsed(4);
  EpiloguePlan e = planCall(f, fusedCall(1, 16384, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantAddRmsNorm);
  EXPECT_NE(e.reason.find("exceed the pull kernel's registers"), std::string::npos) << e.reason;
  e = planCall(f, fusedCall(3, 1001, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantAddRmsNorm);
  EXPECT_NE(e.reason.find("whole 16-byte vectors"), std::string::npos) << e.reason;
  const CallPlan big = planCall(f, fusedCall(512, 8192, tpcommBfloat16, false));
  EXPECT_FALSE(isFusedVariant(big.epilogue.variant)) << big.epilogue.reason;
  EXPECT_EQ(kFusedPullVecs * kThreadsPerBlock, 1024);
}

// The pull rows have their kernels at every world class (the start-up image check covers them),
// and the launch finds them as the one-pass kernel it asks for.
TEST(FusedPullPlan, EveryPullVariantHasKernels) {
  for (tpcommVariant_t v :
       {tpcommVariantFusedP2pOneShotPullLL, tpcommVariantFusedP2pOneShotPullLLFp8,
        tpcommVariantFusedP2pOneShotPull, tpcommVariantFusedP2pOneShotPullFp8})
    for (int w : {2, 4, 8})
      for (int d = 0; d < kNumDtypes; ++d) {
        EXPECT_NE(variantKernel(v, w, d), nullptr) << tpcommVariantName(v) << " world " << w;
        EXPECT_EQ(variantOnePassKernel(v, w, d), variantKernel(v, w, d)) << tpcommVariantName(v);
        EXPECT_EQ(variantClusterKernel(v, w, d), nullptr) << tpcommVariantName(v);
      }
}

// TPCOMM_KNOBS=variant=<name> reaches every pull row on a communicator whose all-reduce pushes.
TEST(FusedPullPlan, ForcedByName) {
  for (tpcommVariant_t v : {tpcommVariantFusedP2pOneShotPullLL, tpcommVariantFusedP2pOneShotPull}) {
    CommFacts f = factsFor(2, Fabric::kNvlink);
    f.knobs.variant = v;
    const CallPlan p = planCall(f, fusedCall(1, 7168, tpcommBfloat16, false));
    EXPECT_EQ(p.epilogue.variant, v) << p.epilogue.reason;
    EXPECT_EQ(p.epilogue.reason.rfind("variant=", 0), 0u) << p.epilogue.reason;
  }
}

}  // namespace
}  // namespace tpcomm
