// The one-step pull with the flag in the data (oneshot_pull_ll.cu) in the planner: oneshot_pull
// calls of one step up to the pull_ll_bytes knob take it by size and knobs alone (an aligned and
// a misaligned rank must run the same protocol: the LL and flag kernels do not pair), within what
// an LL slot of the outbox holds; the knob parses, is ranged and turns it off; Explain and the
// co-residency cap know it; the outbox layout holds the LL area the kernel addresses.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kernels/layout/pull_ll_layout.h"
#include "plan/co_residency.h"
#include "plan/planner.h"
#include "tests/cpu/support/plan_facts.h"
#include "tools/doctor/doctor_preview.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Every size up to the knob takes LL whatever the alignment; above it, the flag kernels (lean
// where aligned whole vectors allow, else the general one), as before.
TEST(PullLLPlan, SizeAndKnobsDecideNotAlignment) {
  struct Row {
    size_t bytes;
    tpcommVariant_t aligned, misaligned;
  };
  const Row rows[] = {
      {2, tpcommVariantP2pOneShotPullLL, tpcommVariantP2pOneShotPullLL},
      {16, tpcommVariantP2pOneShotPullLL, tpcommVariantP2pOneShotPullLL},
      {1000, tpcommVariantP2pOneShotPullLL, tpcommVariantP2pOneShotPullLL},
      {4 * KiB + 2, tpcommVariantP2pOneShotPullLL, tpcommVariantP2pOneShotPullLL},
      {14 * KiB, tpcommVariantP2pOneShotPullLL, tpcommVariantP2pOneShotPullLL},
      {16 * KiB, tpcommVariantP2pOneShotPullLL, tpcommVariantP2pOneShotPullLL},
      {16 * KiB + 16, tpcommVariantP2pOneShotPullLean, tpcommVariantP2pOneShotPull},
      {16 * KiB + 2, tpcommVariantP2pOneShotPull, tpcommVariantP2pOneShotPull},
  };
  for (int world = 2; world <= 8; ++world)
    for (Fabric fabric : {Fabric::kNvlink, Fabric::kPcie})
      for (const Row& r : rows) {
        const CommFacts f = factsFor(world, fabric, tpcommAlgoOneShotPull);
        const CallPlan a = planCall(f, Call{r.bytes, true});
        const CallPlan m = planCall(f, Call{r.bytes, false});
        EXPECT_EQ(a.variant, r.aligned)
            << "world " << world << ", " << r.bytes << " bytes: " << tpcommVariantName(a.variant);
        EXPECT_EQ(m.variant, r.misaligned)
            << "world " << world << ", " << r.bytes
            << " bytes, misaligned: " << tpcommVariantName(m.variant);
        // Ranks pair block by block: the grid and geometry never depend on alignment either.
        EXPECT_EQ(a.grid.blocks, m.grid.blocks);
        EXPECT_EQ(a.grid.threads, m.grid.threads);
        EXPECT_EQ(a.geometry.per, m.geometry.per);
        if (a.variant == tpcommVariantP2pOneShotPullLL) {
          EXPECT_EQ(a.geometry.nsteps, 1u);
          EXPECT_LE(a.geometry.per, static_cast<size_t>(a.grid.threads));
        }
      }
  // Auto on a collapsing PCIe fabric pulls: decode's 7168-wide bf16 row takes LL, misaligned or
  // with a partial vector too.
  CommFacts f = factsFor(8, Fabric::kPcie);
  f.fabric_verdict = FabricVerdict::kWriteCollapse;
  for (size_t bytes : {14 * KiB, 14 * KiB + 2})
    for (bool aligned : {true, false})
      EXPECT_EQ(planCall(f, Call{bytes, aligned}).variant, tpcommVariantP2pOneShotPullLL)
          << bytes << " aligned " << aligned;
  // Push one-shots never take it.
  EXPECT_EQ(planCall(factsFor(2, Fabric::kNvlink), Call{1 * KiB, true}).variant,
            tpcommVariantP2pOneShotLean);
}

TEST(PullLLPlan, KnobMovesAndTurnsOffTheThreshold) {
  CommFacts f = factsFor(2, Fabric::kPcie, tpcommAlgoOneShotPull);
  EXPECT_EQ(f.knobs.pull_ll_bytes, 16384);
  ASSERT_EQ(parseLaunchKnobs("pull_ll_bytes=0", &f.knobs), "");
  EXPECT_EQ(f.knobs.pull_ll_bytes, 0);
  EXPECT_EQ(planCall(f, Call{1 * KiB, true}).variant, tpcommVariantP2pOneShotPullLean);
  EXPECT_EQ(planCall(f, Call{1 * KiB, false}).variant, tpcommVariantP2pOneShotPull);
  EXPECT_EQ(planCall(f, Call{2, true}).variant, tpcommVariantP2pOneShotPull);
  ASSERT_EQ(parseLaunchKnobs("pull_ll_bytes=65536", &f.knobs), "");
  EXPECT_EQ(planCall(f, Call{64 * KiB, false}).variant, tpcommVariantP2pOneShotPullLL);
  EXPECT_EQ(planCall(f, Call{64 * KiB + 2, true}).variant, tpcommVariantP2pOneShotPull);
  EXPECT_EQ(planCall(f, Call{64 * KiB + 16, true}).variant, tpcommVariantP2pOneShotPullLean);
}

// A call of several steps is never LL (its kernel has no step loop): steps shorter than the call
// through oneshot_step_bytes keep the flag kernels, on every rank alike.
TEST(PullLLPlan, MultiStepCallsKeepTheFlagKernels) {
  CommFacts f = factsFor(4, Fabric::kPcie, tpcommAlgoOneShotPull);
  ASSERT_EQ(parseLaunchKnobs("oneshot_step_bytes=4096", &f.knobs), "");
  const CallPlan p = planCall(f, Call{8 * KiB, true});
  EXPECT_EQ(p.geometry.nsteps, 2u);
  EXPECT_EQ(p.variant, tpcommVariantP2pOneShotPull);
  EXPECT_EQ(planCall(f, Call{4 * KiB, false}).variant, tpcommVariantP2pOneShotPullLL);
}

TEST(PullLLPlan, KnobParsesAndIsRanged) {
  LaunchKnobs k;
  EXPECT_EQ(parseLaunchKnobs("pull_ll_bytes=4096,lean=0", &k), "");
  EXPECT_EQ(k.pull_ll_bytes, 4096);
  EXPECT_EQ(launchKnobsError(k, 512), "");
  EXPECT_NE(parseLaunchKnobs("pull_ll_bytes=-1", &k), "");
  EXPECT_NE(parseLaunchKnobs("pull_ll_bytes=16K", &k), "");
  k.pull_ll_bytes = 65536;
  EXPECT_EQ(launchKnobsError(k, 512), "");
  k.pull_ll_bytes = 65537;  // more than an LL slot holds
  EXPECT_EQ(launchKnobsError(k, 512),
            "pull_ll_bytes=65537 is out of range (expected 0 (off) to 65536 (an LL slot))");
}

// Explain (the plan's reason) says the call takes LL entries and under which knob; the doctor's
// preview names the variant per size.
TEST(PullLLPlan, ExplainAndPreviewSayLL) {
  const CommFacts f = factsFor(2, Fabric::kPcie, tpcommAlgoOneShotPull);
  const CallPlan p = planCall(f, Call{8 * KiB, true});
  EXPECT_TRUE(contains(p.decision.reason, "forced (TPCOMM_ALGO / config.algo = oneshot_pull)"))
      << p.decision.reason;
  EXPECT_TRUE(contains(p.decision.reason, "; LL entries (flag in the data: pull_ll_bytes=16384)"))
      << p.decision.reason;
  EXPECT_LT(p.decision.reason.size(), sizeof(tpcommCallInfo_t{}.reason));
  EXPECT_STREQ(tpcommVariantName(tpcommVariantP2pOneShotPullLL), "p2p_oneshot_pull_ll");
  EXPECT_FALSE(contains(planCall(f, Call{32 * KiB, true}).decision.reason, "LL entries"));

  cli::PreviewOptions o;
  o.nccl_available = true;
  o.fabric_verdict = FabricVerdict::kWriteCollapse;
  bool saw = false;
  for (const cli::PreviewWorld& w : cli::previewHypothetical(o)) {
    if (w.fabric != Fabric::kPcie) continue;
    for (const cli::PreviewRow& r : w.rows) {
      if (r.bytes > 16 * KiB || !isPullAlgo(r.decision.algo)) continue;
      saw = true;
      EXPECT_EQ(r.variant, tpcommVariantP2pOneShotPullLL) << "world " << w.world << " " << r.bytes;
    }
  }
  EXPECT_TRUE(saw);
}

// The outbox: kNumSlots flag-pull slots, the flags, then kNumSlots LL slots, in the one zeroed
// allocation; a 64 KiB call's entries fill an LL slot exactly, every half at its own 16-byte
// place; one vector more does not fit, and the planner never asks for it.
TEST(PullLLPlan, OutboxHoldsTheLLArea) {
  const size_t slot_bytes = 16 * MiB;
  const size_t pull_slot = pullSlotBytes(slot_bytes);
  EXPECT_EQ(pullLLAreaOffset(pull_slot), kNumSlots * pull_slot + kPullFlagBytes);
  EXPECT_EQ(pullOutboxBytes(slot_bytes), pullLLAreaOffset(pull_slot) + kNumSlots * 128 * KiB);
  EXPECT_EQ(pullLLAreaOffset(pull_slot) % kVecBytes, 0u);
  EXPECT_EQ(pullLLAreaOffset(pullSlotBytes(256 * KiB)) % kVecBytes, 0u);  // the smallest slots

  EXPECT_EQ(kPullLLMaxCallBytes, 64 * KiB);
  EXPECT_EQ(pullLLCallBytes(kPullLLMaxCallBytes), kPullLLSlotBytes);
  EXPECT_GT(pullLLCallBytes(kPullLLMaxCallBytes + 2), kPullLLSlotBytes);
  EXPECT_EQ(pullLLCallBytes(2), 1 * KiB);  // a whole block for the first vector
  const size_t nvec = kPullLLMaxCallBytes / kVecBytes;
  std::set<size_t> halves;
  for (size_t v = 0; v < nvec; ++v)
    for (int h = 0; h < 2; ++h) {
      const size_t off = pullLLHalfOffset(v, h);
      ASSERT_EQ(off % kVecBytes, 0u);
      ASSERT_LE(off + kVecBytes, kPullLLSlotBytes) << "vector " << v << " half " << h;
      ASSERT_TRUE(halves.insert(off).second) << "vector " << v << " half " << h << " collides";
    }
  // A partial block (33 vectors) stays inside the bytes its call is counted for.
  for (size_t v = 0; v < 33; ++v)
    EXPECT_LE(pullLLHalfOffset(v, 1) + kVecBytes, pullLLCallBytes(33 * kVecBytes));

  // The planner reads the capacity from the slot layout, not from the knob alone.
  CommFacts f = factsFor(2, Fabric::kPcie, tpcommAlgoOneShotPull);
  EXPECT_EQ(f.slots.pull_ll_step_bytes, kPullLLMaxCallBytes);
  f.knobs.pull_ll_bytes = 65536;
  f.slots.pull_ll_step_bytes = 4 * KiB;
  EXPECT_EQ(planCall(f, Call{4 * KiB, true}).variant, tpcommVariantP2pOneShotPullLL);
  EXPECT_EQ(planCall(f, Call{8 * KiB, true}).variant, tpcommVariantP2pOneShotPullLean);
}

// Ranks sharing a GPU: the grid a call that may take LL plans fits the communicator's one cap,
// LL or not (floor(132 / 16) = 8 at eight ranks under PDL).
TEST(PullLLPlan, CoResidencyCapCoversTheLLKernel) {
  const GridCaps caps = gridCapsOf({GpuShare{132, true, 8}});
  CommFacts f = factsFor(8, Fabric::kPcie, tpcommAlgoOneShotPull);
  f.grid_caps = &caps;
  CallPlan p = planCall(f, Call{16 * KiB, true});  // 16 KiB asks for 8 blocks
  EXPECT_EQ(p.variant, tpcommVariantP2pOneShotPullLL) << p.decision.reason;
  EXPECT_LE(p.grid.blocks, caps.blocks);
  ASSERT_EQ(parseLaunchKnobs("block_bytes=256", &f.knobs), "");  // asks for 64 blocks
  p = planCall(f, Call{16 * KiB, true});
  EXPECT_EQ(p.grid.blocks, 8) << p.decision.reason;
  EXPECT_TRUE(p.grid.co_resident_capped);
  // With LL off, the flag kernels: the same cap.
  f.knobs.pull_ll_bytes = 0;
  EXPECT_EQ(planCall(f, Call{16 * KiB, true}).grid.blocks, 8);
}

}  // namespace
}  // namespace tpcomm
