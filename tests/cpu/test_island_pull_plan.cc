// The island algorithm over pull (island_pull, src/kernels/island_pull.cu) as the host sees it:
// auto picks it where a write-collapse verdict meets two real islands, in the sizes the push
// island had, and never the push island there; forced by name (TPCOMM_ALGO) it runs its variant
// at the island worlds with the outbox geometry its kernel lays out, and is refused elsewhere,
// saying why; it runs unfused under tpcommAllReduceAddRmsNorm; Explain and the doctor's preview
// name it.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "comm/comm.h"
#include "comm/lifecycle/registry.h"
#include "common/env.h"
#include "kernels/layout/chunk_layout.h"
#include "kernels/runtime/variant_table.h"
#include "plan/fused_plan.h"
#include "plan/planner.h"
#include "plan/rsag_plan.h"
#include "support/synthetic_fabrics.h"
#include "tests/cpu/support/plan_facts.h"
#include "tools/doctor/doctor_preview.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The published two-socket box whose switches collapse posted writes (Broadcom PEX890xx, dual
// AMD Turin: stores 37 -> 2.7 GB/s with all pairs, loads hold), and a healthy two-socket box.
const topo::FabricProbe kBroadcomTurin = topo::syntheticFabric(37, 27, 56, 2.7, 27);
const topo::FabricProbe kTwoSocketsNoSwitch = topo::syntheticFabric(53, 45, 56, 23.8, 22, 23.8);

PolicyInput box(int world, size_t bytes, const topo::FabricProbe& probe, bool two_islands) {
  PolicyInput in;
  in.world = world;
  in.bytes = bytes;
  in.fabric = Fabric::kPcie;
  in.two_islands = two_islands;
  in.nccl_available = true;
  in.fabric_verdict = topo::judgeFabric(probe, /*p2p=*/true).verdict;
  return in;
}

TEST(IslandPullPolicy, ACollapsingTwoSocketBoxPicksIslandPullWhereTheIslandRan) {
  for (int world : {6, 8}) {
    PolicyInput in = box(world, 0, kBroadcomTurin, /*two_islands=*/true);
    ASSERT_EQ(in.fabric_verdict, FabricVerdict::kWriteCollapse);
    for (size_t bytes = 1 * KiB; bytes <= 64 * MiB; bytes *= 2) {
      in.bytes = bytes;
      const Decision d = choose(in);
      ASSERT_EQ(d.error, tpcommSuccess) << d.reason;
      EXPECT_NE(d.algo, tpcommAlgoIsland) << bytes << ": " << d.reason;
      // The push island's sizes (above 1 MiB: plan/policy.cc, pcieIslands) go to island_pull.
      const bool island_sizes = bytes > 1 * MiB;
      EXPECT_EQ(d.algo == tpcommAlgoIslandPull, island_sizes)
          << "world " << world << ", " << bytes << ": " << d.reason;
    }
    in.bytes = 1 * MiB + 1;
    const Decision d = choose(in);
    EXPECT_EQ(d.algo, tpcommAlgoIslandPull);
    EXPECT_TRUE(contains(d.reason,
                         "island_pull by default table for pcie (fabric probe: "
                         "write_collapse)"))
        << d.reason;
    EXPECT_FALSE(d.fallback);
    in.bytes = 14 * KiB;
    EXPECT_EQ(choose(in).algo, tpcommAlgoOneShotPull);
    in.bytes = 512 * KiB;
    EXPECT_EQ(choose(in).algo, tpcommAlgoTwoShotPull);
  }
  // Without islands (one switch), or at world 4 (where the push island was never picked either),
  // the collapse table keeps NCCL for the large calls.
  EXPECT_EQ(choose(box(8, 16 * MiB, kBroadcomTurin, false)).algo, tpcommAlgoNccl);
  EXPECT_EQ(choose(box(4, 16 * MiB, kBroadcomTurin, true)).algo, tpcommAlgoNccl);
}

TEST(IslandPullPolicy, AHealthyTwoSocketBoxKeepsThePushIslandAndNvlinkIsUnchanged) {
  for (int world : {6, 8}) {
    PolicyInput in = box(world, 4 * MiB, kTwoSocketsNoSwitch, /*two_islands=*/true);
    EXPECT_EQ(in.fabric_verdict, FabricVerdict::kPushFine);
    EXPECT_EQ(choose(in).algo, tpcommAlgoIsland) << choose(in).reason;
    in.fabric_verdict = FabricVerdict::kUnknown;
    EXPECT_EQ(choose(in).algo, tpcommAlgoIsland);
  }
  PolicyInput in = box(8, 64 * MiB, kBroadcomTurin, true);
  in.fabric = Fabric::kNvlink;  // the verdict steers PCIe only
  EXPECT_EQ(choose(in).algo, tpcommAlgoTwoShot) << choose(in).reason;
  in.bytes = 14 * KiB;
  EXPECT_EQ(choose(in).algo, tpcommAlgoOneShot);
}

// Where island_pull is unavailable to auto (no islands: a tuned table naming it), the
// bandwidth algorithm of a collapsing fabric takes over: the two-shot pull, not a push.
TEST(IslandPullPolicy, ATunedRowWithoutIslandsFallsBackToTwoShotPull) {
  const SizeTable tuned = {{SIZE_MAX, tpcommAlgoIslandPull}};
  PolicyInput in = box(8, 4 * MiB, kBroadcomTurin, /*two_islands=*/false);
  in.tuned = &tuned;
  const Decision d = choose(in);
  EXPECT_EQ(d.algo, tpcommAlgoTwoShotPull) << d.reason;
  EXPECT_TRUE(
      contains(d.reason, "island_pull unavailable (the GPUs do not form two equal islands)"))
      << d.reason;
  in.two_islands = true;
  EXPECT_EQ(choose(in).algo, tpcommAlgoIslandPull);
}

TEST(IslandPullPolicy, ForcedNeedsAnEvenWorldOfAtLeastFourAndP2p) {
  for (int world : {1, 2, 3, 5, 7}) {
    PolicyInput in = box(world, 1 * MiB, kBroadcomTurin, false);
    in.forced_algo = tpcommAlgoIslandPull;
    const Decision d = choose(in);
    EXPECT_EQ(d.error, tpcommUnsupported) << world;
    EXPECT_TRUE(contains(d.reason, "forced algorithm island_pull cannot run: world " +
                                       std::to_string(world) +
                                       ": island_pull needs an even world of at least 4"))
        << d.reason;
  }
  for (int world : {4, 6, 8})
    for (Fabric fabric : {Fabric::kNvlink, Fabric::kPcie}) {
      PolicyInput in = box(world, 4 * KiB, kTwoSocketsNoSwitch, false);
      in.fabric = fabric;
      in.forced_algo = tpcommAlgoIslandPull;
      const Decision d = choose(in);
      EXPECT_EQ(d.error, tpcommSuccess) << d.reason;
      EXPECT_EQ(d.algo, tpcommAlgoIslandPull);
    }
  PolicyInput in = box(8, 4 * KiB, kTwoSocketsNoSwitch, false);
  in.fabric = Fabric::kHost;
  in.forced_algo = tpcommAlgoIslandPull;
  const Decision d = choose(in);
  EXPECT_EQ(d.error, tpcommUnsupported);
  EXPECT_TRUE(contains(d.reason, "peer-to-peer")) << d.reason;
}

TEST(IslandPullPlan, TpcommAlgoTakesTheNameAndTheVariantIsNamed) {
  EXPECT_EQ(tpcommAlgoIslandPull, 11);
  EXPECT_EQ(tpcommVariantIslandPull, 25);
  EXPECT_STREQ(tpcommAlgoName(tpcommAlgoIslandPull), "island_pull");
  EXPECT_STREQ(tpcommVariantName(tpcommVariantIslandPull), "island_pull");
  EXPECT_EQ(parseAlgoName("island_pull"), tpcommAlgoIslandPull);
  const Env e = parseEnvironment([](const char* name) -> const char* {
    return std::string(name) == "TPCOMM_ALGO" ? "island_pull" : nullptr;
  });
  EXPECT_TRUE(e.errors.empty());
  EXPECT_EQ(e.algo, tpcommAlgoIslandPull);
  bool documented = false;
  for (const EnvVarDoc& doc : envDocs())
    if (std::string(doc.name) == "TPCOMM_ALGO") documented = contains(doc.meaning, "island_pull");
  EXPECT_TRUE(documented) << "TPCOMM_ALGO's doc line names island_pull";
}

// Forced, every size runs the island_pull kernel at worlds 4, 6, 8; its chunk is what the kernel
// lays out in an outbox slot (m input areas, the fp32 partial's two, the result's one), and its
// grid is the push island's for the same step (a block owns a sub-range of each of m segments).
TEST(IslandPullPlan, ForcedRunsItsVariantWithTheOutboxGeometry) {
  for (int world : {4, 6, 8}) {
    const size_t m = static_cast<size_t>(world / 2);
    const CommFacts f = factsFor(world, Fabric::kPcie, tpcommAlgoIslandPull);
    const size_t slot_vecs = pullSlotBytes(16 * MiB) / kVecBytes;
    EXPECT_EQ(f.slots.island_pull_chunk_vecs, slot_vecs / (m + 3) * m) << "world " << world;
    for (size_t bytes : {size_t{2}, 16 * KiB + 6, 1 * MiB, 64 * MiB}) {
      const CallPlan p = planCall(f, Call{bytes, bytes % 16 == 0});
      const std::string at = "world " + std::to_string(world) + ", " + std::to_string(bytes);
      ASSERT_EQ(p.decision.error, tpcommSuccess) << at << ": " << p.decision.reason;
      EXPECT_EQ(p.variant, tpcommVariantIslandPull) << at;
      EXPECT_EQ(p.decision.algo, tpcommAlgoIslandPull) << at;
      EXPECT_EQ(p.chunk_vecs, f.slots.island_pull_chunk_vecs) << at;
      EXPECT_EQ(p.geometry.region + p.geometry.nsteps + p.geometry.per, 0u) << at;
      const ChunkedCall k =
          chunkedCall(slot_vecs, static_cast<int>(m) + 3, static_cast<int>(m),
                      (bytes + 15) / kVecBytes, p.chunk_vecs, static_cast<unsigned>(p.grid.blocks));
      EXPECT_EQ(k.chunk_vecs, p.chunk_vecs) << at << ": the kernel would take other steps";
      EXPECT_LE(k.seg_cap * (m + 3), slot_vecs) << at;
      const GridPlan push =
          planGrid(tpcommAlgoIsland, bytes, p.chunk_vecs * kVecBytes, world, f.knobs);
      EXPECT_EQ(p.grid.blocks, push.blocks) << at;
      EXPECT_EQ(p.grid.threads, push.threads) << at;
      EXPECT_NE(variantKernel(p.variant, world, 2), nullptr) << at;
    }
  }
  // Worlds without two islands of at least 2 ranks have no kernel and no plan.
  for (int world : {2, 3, 5, 7}) {
    const CallPlan p =
        planCall(factsFor(world, Fabric::kPcie, tpcommAlgoIslandPull), Call{64 * KiB, true});
    EXPECT_EQ(p.variant, tpcommVariantNone) << world;
    EXPECT_EQ(p.decision.error, tpcommUnsupported) << world;
  }
  EXPECT_EQ(variantKernel(tpcommVariantIslandPull, 2, 0), nullptr);
  EXPECT_NE(variantKernel(tpcommVariantIslandPull, 8, 0), nullptr);
}

// The outbox flags have a set for each of island_pull's three publishes a step (its flag of
// phase 2 would otherwise be the next slot's phase 0), and the outbox the staging allocation
// reserves holds them after the slots.
TEST(IslandPullPlan, TheOutboxHasAFlagSetPerPhase) {
  EXPECT_GE(kPullPhases, 3);
  EXPECT_GE(pullOutboxBytes(16 * MiB) - kNumSlots * pullSlotBytes(16 * MiB),
            static_cast<size_t>(kNumSlots) * 3 * kBulkFlagBlocks * sizeof(uint32_t));
}

// The collapsing two-socket box through the planner: the variant, as Explain reports it.
TEST(IslandPullPlan, TheVerdictAndTwoIslandsPlanTheVariant) {
  CommFacts f = factsFor(8, Fabric::kPcie);
  f.two_islands = true;
  f.fabric_verdict = FabricVerdict::kWriteCollapse;
  CallPlan p = planCall(f, Call{16 * MiB, true});
  EXPECT_EQ(p.variant, tpcommVariantIslandPull) << p.decision.reason;
  EXPECT_EQ(p.chunk_vecs, f.slots.island_pull_chunk_vecs);
  f.fabric_verdict = FabricVerdict::kPushFine;
  p = planCall(f, Call{16 * MiB, true});
  EXPECT_EQ(p.variant, tpcommVariantIsland) << p.decision.reason;
}

// tpcommCommExplain on a registered communicator object (the planner needs no GPU).
TEST(IslandPullPlan, ExplainNamesTheVariantAndWhy) {
  tpcommComm c;
  c.state = CommState::kReady;
  c.world = 8;
  c.rank = 0;
  c.fabric = Fabric::kPcie;
  c.two_islands = true;
  c.fabric_verdict = FabricVerdict::kWriteCollapse;
  c.dev.world = 8;
  c.dev.slot_bytes = 16 * MiB;
  c.slots = slotCapacity(c.dev);
  registerComm(&c);
  tpcommCallInfo_t info{};
  EXPECT_EQ(tpcommCommExplain(&c, 8 * MiB, tpcommBfloat16, &info), tpcommSuccess)
      << tpcommGetLastError();
  EXPECT_EQ(info.algo, tpcommAlgoIslandPull);
  EXPECT_EQ(info.variant, tpcommVariantIslandPull);
  EXPECT_TRUE(contains(info.reason, "island_pull by default table")) << info.reason;
  EXPECT_GE(info.blocks, 1);
  c.settings.algo = tpcommAlgoIslandPull;  // forced, at a decode size
  EXPECT_EQ(tpcommCommExplain(&c, 7168, tpcommBfloat16, &info), tpcommSuccess);
  EXPECT_EQ(info.variant, tpcommVariantIslandPull);
  EXPECT_TRUE(contains(info.reason, "forced (TPCOMM_ALGO / config.algo = island_pull)"))
      << info.reason;
  unregisterComm(&c);
}

// Where the all-reduce is island_pull the fused call is the fused island over pull at every size
// (test_fused_island_plan.cc has the rest), one step or many.
TEST(IslandPullPlan, TheFusedCallTakesTheFusedIsland) {
  const CommFacts f = factsFor(8, Fabric::kPcie, tpcommAlgoIslandPull);
  const CallPlan plan = planCall(f, fusedCall(1, 7168, tpcommBfloat16, false));
  EXPECT_EQ(plan.variant, tpcommVariantIslandPull);
  EXPECT_EQ(plan.epilogue.variant, tpcommVariantFusedP2pIslandPull) << plan.epilogue.reason;
  const CallPlan big = planCall(f, fusedCall(1024, 7168, tpcommBfloat16, false));
  EXPECT_EQ(big.epilogue.variant, tpcommVariantFusedP2pIslandPull) << big.epilogue.reason;
  EXPECT_TRUE(contains(big.epilogue.reason, "fused island over")) << big.epilogue.reason;
}

// Reduce-scatter and all-gather where the all-reduce would take island_pull run the pull halves,
// as twoshot_pull's: a collapsing fabric gets no SM pushes from them either.
TEST(IslandPullPlan, HalvesAreThePullHalves) {
  for (const bool collapse : {false, true}) {
    EXPECT_EQ(rsagVariant(tpcommCollReduceScatter, tpcommAlgoIslandPull, collapse),
              tpcommVariantP2pReduceScatterPull);
    EXPECT_EQ(rsagVariant(tpcommCollAllGather, tpcommAlgoIslandPull, collapse),
              tpcommVariantP2pAllGatherPull);
  }
}

// `tpcomm doctor` previews island_pull for the large calls of a collapsing two-socket box.
TEST(IslandPullPlan, DoctorPreviewNamesIt) {
  cli::PreviewOptions o;
  o.nccl_available = true;
  o.fabric_verdict = FabricVerdict::kWriteCollapse;
  o.forced_algo = tpcommAlgoIslandPull;
  bool saw = false;
  for (const cli::PreviewWorld& w : cli::previewHypothetical(o)) {
    if (w.fabric == Fabric::kHost) continue;
    for (const cli::PreviewRow& r : w.rows) {
      const bool runs = w.world >= 4 && w.world % 2 == 0;
      EXPECT_EQ(r.variant, runs ? tpcommVariantIslandPull : tpcommVariantNone)
          << fabricName(w.fabric) << " world " << w.world << " " << r.bytes << ": "
          << r.decision.reason;
      saw = saw || runs;
    }
  }
  EXPECT_TRUE(saw);
}

}  // namespace
}  // namespace tpcomm
