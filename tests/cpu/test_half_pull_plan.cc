// The halves of twoshot_pull as reduce-scatter and all-gather (rsag_pull.cu): wherever the
// all-reduce's policy picks a pull algorithm (the probe's write_collapse verdict, or one forced),
// the reduce-scatter and the all-gather run the pull halves and never fail for want of a half;
// the copy-engine one-shot, which has no half, maps to the pull halves where stores collapse and
// to the push halves elsewhere, and says why.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/call/call_common.h"
#include "comm/comm.h"
#include "comm/lifecycle/registry.h"
#include "kernels/layout/chunk_layout.h"
#include "kernels/runtime/algo_launch.h"
#include "kernels/runtime/variant_table.h"
#include "plan/rsag_plan.h"
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;
constexpr tpcommColl_t kRS = tpcommCollReduceScatter, kAG = tpcommCollAllGather;

bool has(const std::string& text, const char* word) {
  return text.find(word) != std::string::npos;
}

std::string nameOf(tpcommVariant_t v) {
  const char* n = tpcommVariantName(v);
  return n ? n : "(unnamed " + std::to_string(static_cast<int>(v)) + ")";
}

struct PullRow {
  int world;
  size_t bytes;    // the whole message
  int forced;      // -1: the policy, with the write_collapse verdict
  bool collapse;   // the fabric probe's verdict is write_collapse
  bool pull;       // the pull halves run it, else the push halves
  const char* of;  // the algorithm the reason names the half of
};

// Every pull decision, and the copy-engine one-shot, over PCIe: a half runs, named in the reason.
TEST(HalfPullPlan, PullAlgorithmsRunThePullHalves) {
  const PullRow rows[] = {
      {2, 4 * KiB, -1, true, true, "twoshot_pull"},    // oneshot_pull by the table
      {2, 16 * MiB, -1, true, true, "twoshot_pull"},   // twoshot_pull by the table
      {8, 14 * KiB, -1, true, true, "twoshot_pull"},   // oneshot_pull by the table
      {8, 512 * KiB, -1, true, true, "twoshot_pull"},  // twoshot_pull by the table
      {3, 1000, -1, true, true, "twoshot_pull"},       // an odd world
      {2, 64 * KiB, tpcommAlgoOneShotPull, false, true, "twoshot_pull"},
      {4, 8 * MiB, tpcommAlgoTwoShotPull, false, true, "twoshot_pull"},
      {8, 1 * KiB, tpcommAlgoTwoShotPull, true, true, "twoshot_pull"},
      {2, 32 * KiB, tpcommAlgoOneShotCe, true, true, "twoshot_pull"},
      {4, 32 * KiB, tpcommAlgoOneShotCe, false, false, "twoshot"},
  };
  for (const PullRow& r : rows) {
    CommFacts f = factsFor(r.world, Fabric::kPcie, r.forced);
    if (r.collapse) f.fabric_verdict = FabricVerdict::kWriteCollapse;
    const std::string at = "world " + std::to_string(r.world) + ", " + std::to_string(r.bytes) +
                           " bytes, forced " + std::to_string(r.forced) +
                           (r.collapse ? ", write_collapse: " : ": ");
    for (tpcommColl_t coll : {kRS, kAG}) {
      const bool rs = coll == kRS;
      const CallPlan p = planCall(f, Call{r.bytes, true, coll});
      const Decision& d = p.decision;
      ASSERT_EQ(d.error, tpcommSuccess) << at << d.reason;
      const char* want = r.pull ? (rs ? "p2p_reduce_scatter_pull" : "p2p_all_gather_pull")
                                : (rs ? "p2p_reduce_scatter" : "p2p_all_gather");
      EXPECT_EQ(nameOf(p.variant), want) << at << d.reason;
      EXPECT_EQ(d.algo, r.pull ? tpcommAlgoTwoShotPull : tpcommAlgoTwoShot) << at << d.reason;
      const std::string head =
          std::string(rs ? "reduce-scatter" : "all-gather") + " half of " + r.of + ",";
      EXPECT_EQ(d.reason.rfind(head, 0), 0u) << at << d.reason;
      EXPECT_EQ(p.chunk_vecs, r.pull ? f.slots.pull_chunk_vecs : f.slots.twoshot_chunk_vecs) << at;
      EXPECT_GE(p.grid.blocks, 1) << at;
      EXPECT_NE(variantKernel(p.variant, r.world, 1), nullptr) << at << nameOf(p.variant);
      if (r.forced == tpcommAlgoOneShotCe) {
        EXPECT_TRUE(has(d.reason, "the copy engines have no half-collective variant"))
            << at << d.reason;
      }
    }
  }
}

// The island over push keeps its push halves; a healthy PCIe fabric never gets the pull ones
// unasked, and a collapsing one past the table's NCCL size goes to NCCL as the all-reduce does.
TEST(HalfPullPlan, PushAndNcclDecisionsAreUnchanged) {
  CommFacts f = factsFor(8, Fabric::kPcie, tpcommAlgoIsland);
  f.fabric_verdict = FabricVerdict::kWriteCollapse;
  EXPECT_EQ(nameOf(planCall(f, Call{MiB, true, kRS}).variant), "p2p_reduce_scatter");
  f = factsFor(8, Fabric::kPcie);
  EXPECT_EQ(nameOf(planCall(f, Call{512 * KiB, true, kAG}).variant), "p2p_all_gather");
  f.fabric_verdict = FabricVerdict::kWriteCollapse;
  const CallPlan p = planCall(f, Call{16 * MiB, true, kAG});
  EXPECT_EQ(p.variant, tpcommVariantNccl) << p.decision.reason;
  EXPECT_TRUE(p.decision.fallback);
}

// Ranks sharing a GPU: the pull half's grid fits the communicator's one cap.
TEST(HalfPullPlan, TheCoResidencyCapOfThePullHalfCutsTheGrid) {
  CommFacts f = factsFor(4, Fabric::kPcie, tpcommAlgoTwoShotPull);
  const tpcommVariant_t rs = planCall(f, Call{64 * MiB, true, kRS}).variant;
  ASSERT_EQ(nameOf(rs), "p2p_reduce_scatter_pull");
  GridCaps caps;
  caps.ranks_per_gpu = 4;
  caps.blocks = 3;
  f.grid_caps = &caps;
  const CallPlan p = planCall(f, Call{64 * MiB, true, kRS});
  EXPECT_EQ(p.grid.blocks, 3) << p.decision.reason;
  EXPECT_EQ(p.decision.reason.rfind("capped at 3 blocks: 4 ranks share a GPU; ", 0), 0u)
      << p.decision.reason;
  EXPECT_EQ(planCall(f, Call{64 * MiB, true, kAG}).grid.blocks, 3);
}

// Explain answers through the same planner for a communicator whose probe said write_collapse.
TEST(HalfPullPlan, ExplainNamesThePullHalf) {
  tpcommComm c;
  c.state = CommState::kReady;
  c.world = 4;
  c.fabric = Fabric::kPcie;
  c.fabric_verdict = FabricVerdict::kWriteCollapse;
  c.settings.algo = -1;
  DeviceComm d{};
  d.world = 4;
  d.slot_bytes = 16 * MiB;
  c.slots = slotCapacity(d);
  registerComm(&c);
  tpcommCallInfo_t info{};
  EXPECT_EQ(tpcommCommExplainCollective(&c, kRS, 1000, tpcommBfloat16, &info), tpcommSuccess)
      << tpcommGetLastError();
  EXPECT_EQ(nameOf(static_cast<tpcommVariant_t>(info.variant)), "p2p_reduce_scatter_pull");
  EXPECT_EQ(info.algo, tpcommAlgoTwoShotPull);
  EXPECT_TRUE(has(info.reason, "reduce-scatter half of twoshot_pull")) << info.reason;
  EXPECT_TRUE(has(info.reason, "write_collapse")) << info.reason;
  EXPECT_EQ(tpcommCommExplainCollective(&c, kAG, 1 << 20, tpcommFloat32, &info), tpcommSuccess)
      << tpcommGetLastError();
  EXPECT_EQ(nameOf(static_cast<tpcommVariant_t>(info.variant)), "p2p_all_gather_pull");
  EXPECT_GE(info.blocks, 1);
  unregisterComm(&c);
}

// The pull halves' geometry, walked as rsag_pull.cu walks it, with the chunk the planner passes
// (SlotCapacity::pull_chunk_vecs of a pull slot): every vector of every rank's run once per call,
// by the same offset in every run, inside its area; the reduced area after the world input areas
// still inside the slot.
TEST(HalfPullLayout, EveryVectorOfEveryRunOnceAndInsideItsArea) {
  struct Case {
    size_t slot_bytes;  // the push slot; the pull slot is pullSlotBytes of it
    int world;
    size_t seg_vecs;
    unsigned grid, block;
  };
  const Case cases[] = {{1 << 16, 2, 1, 1, 32},
                        {1 << 16, 2, 3000, 3, 64},
                        {1 << 16, 3, 4097, 4, 32},
                        {16 << 20, 8, 1 << 15, 8, 128},
                        {256 << 10, 3, 50001, 8, 512},
                        {1 << 16, 5, 777, 2, 96},
                        {16 << 20, 4, (1 << 18) + 1, 16, 256}};
  for (const Case& cs : cases) {
    DeviceComm d{};
    d.world = cs.world;
    d.slot_bytes = cs.slot_bytes;
    const size_t slot_entries = pullSlotBytes(cs.slot_bytes) / kVecBytes;
    const ChunkedCall k = segmentedCallIn(slot_entries, cs.world + 1, cs.world, cs.seg_vecs,
                                          slotCapacity(d).pull_chunk_vecs, cs.grid);
    const std::string at = "world " + std::to_string(cs.world) + ", run " +
                           std::to_string(cs.seg_vecs) + ", slot " + std::to_string(cs.slot_bytes);
    ASSERT_GE(k.nsteps, 1u) << at;
    EXPECT_LE((static_cast<size_t>(cs.world) + 1) * k.seg_cap, slot_entries) << at;
    std::vector<int> seen(cs.seg_vecs, 0);
    for (size_t step = 0; step < k.nsteps; ++step)
      for (unsigned b = 0; b < cs.grid; ++b)
        for (unsigned t = 0; t < cs.block; ++t) {
          const SegmentStep st = segmentStep(k, 5, step, 1, b, t);
          for (size_t o = st.o0; o < st.o1; o += cs.block) {
            ASSERT_LT(o, k.seg_cap) << at;  // inside an input area (and the reduced area)
            ASSERT_LT(st.first + o, cs.seg_vecs) << at;
            seen[st.first + o]++;
          }
        }
    for (size_t v = 0; v < cs.seg_vecs; ++v) ASSERT_EQ(seen[v], 1) << at << ", vector " << v;
  }
}

// The probe's verdict is the machine's, the fabric the communicator's: over NVLink a
// write_collapse verdict steers nothing, and the copy-engine one-shot keeps the push halves.
TEST(HalfPullPlan, TheVerdictSteersPcieOnly) {
  CommFacts f = factsFor(4, Fabric::kNvlink, tpcommAlgoOneShotCe);
  f.fabric_verdict = FabricVerdict::kWriteCollapse;
  for (tpcommColl_t coll : {kRS, kAG}) {
    const CallPlan p = planCall(f, Call{32 * KiB, true, coll});
    ASSERT_EQ(p.decision.error, tpcommSuccess) << p.decision.reason;
    EXPECT_EQ(nameOf(p.variant), coll == kRS ? "p2p_reduce_scatter" : "p2p_all_gather");
    EXPECT_EQ(p.decision.algo, tpcommAlgoTwoShot);
    EXPECT_TRUE(has(p.decision.reason, "variant: the push halves")) << p.decision.reason;
  }
}

}  // namespace
}  // namespace tpcomm
