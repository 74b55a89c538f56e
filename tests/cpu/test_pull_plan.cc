// The pull variants over peer memory in the planner (src/plan/planner.cc, policy.cc): forced by
// name they run their kernels (lean, general, two-shot) with the outbox geometry the kernels lay
// out; auto picks them only through the fabric probe's verdict (a write collapse over PCIe:
// PolicyInput::fabric_verdict), and without it every default stays a push; TPCOMM_ALGO, the
// doctor's preview and the fused planner name them.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/env.h"
#include "kernels/layout/chunk_layout.h"
#include "plan/fused_plan.h"
#include "plan/planner.h"
#include "tests/cpu/support/plan_facts.h"
#include "tools/doctor/doctor_preview.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(PullPlan, ForcedNamesRunTheirVariants) {
  struct Row {
    int algo, world;
    size_t bytes;
    bool aligned;
    tpcommVariant_t want;
  };
  const Row rows[] = {
      // One-shot pull: LL entries up to pull_ll_bytes (16 KiB) whatever the alignment
      // (test_pull_ll_plan.cc); above, the lean kernel for one step of whole aligned vectors,
      // else the general.
      {tpcommAlgoOneShotPull, 2, 4 * KiB, true, tpcommVariantP2pOneShotPullLL},
      {tpcommAlgoOneShotPull, 2, 4 * KiB, false, tpcommVariantP2pOneShotPullLL},
      {tpcommAlgoOneShotPull, 2, 4 * KiB + 2, true, tpcommVariantP2pOneShotPullLL},
      {tpcommAlgoOneShotPull, 2, 32 * KiB, true, tpcommVariantP2pOneShotPullLean},
      {tpcommAlgoOneShotPull, 2, 32 * KiB, false, tpcommVariantP2pOneShotPull},
      {tpcommAlgoOneShotPull, 2, 32 * KiB + 2, true, tpcommVariantP2pOneShotPull},
      {tpcommAlgoOneShotPull, 8, 1 * MiB, true, tpcommVariantP2pOneShotPullLean},
      {tpcommAlgoOneShotPull, 8, 1 * MiB + 16, true, tpcommVariantP2pOneShotPull},  // two steps
      {tpcommAlgoOneShotPull, 4, 64 * MiB, true, tpcommVariantP2pOneShotPull},
      {tpcommAlgoTwoShotPull, 2, 16, true, tpcommVariantP2pTwoShotPull},
      {tpcommAlgoTwoShotPull, 8, 64 * MiB, false, tpcommVariantP2pTwoShotPull},
  };
  for (const Row& r : rows) {
    for (Fabric fabric : {Fabric::kNvlink, Fabric::kPcie}) {
      const CallPlan p = planCall(factsFor(r.world, fabric, r.algo), Call{r.bytes, r.aligned});
      EXPECT_EQ(p.variant, r.want)
          << tpcommAlgoName(r.algo) << " world " << r.world << ", " << r.bytes << " bytes, aligned "
          << r.aligned << ": got " << tpcommVariantName(p.variant) << " (" << p.decision.reason
          << ")";
      EXPECT_EQ(p.decision.algo, r.algo);
      EXPECT_TRUE(contains(p.decision.reason, std::string("forced (TPCOMM_ALGO / config.algo = ") +
                                                  tpcommAlgoName(r.algo) + ")"))
          << p.decision.reason;
    }
  }
}

// A one-shot pull step is one outbox slot (a quarter of a 16 MiB peer slot), cut to the
// oneshot_step_bytes knob (1 MiB) as the push one-shot's is; the two-shot pull's chunk is what
// its kernel lays out in an outbox slot (world segments and the reduced one), so host and kernel
// agree on the steps.
TEST(PullPlan, GeometryIsTheOutboxSlot) {
  for (int world = 2; world <= 8; ++world) {
    CommFacts f = factsFor(world, Fabric::kPcie, tpcommAlgoOneShotPull);
    ASSERT_EQ(f.slots.pull_step_bytes, 4 * MiB);
    CallPlan p = planCall(f, Call{3 * MiB + 16, true});
    EXPECT_EQ(p.geometry.region, 1 * MiB / kVecBytes);
    EXPECT_EQ(p.geometry.nsteps, 4u);
    f.knobs.oneshot_step_bytes = 0;  // the whole outbox slot
    p = planCall(f, Call{3 * MiB + 16, true});
    EXPECT_EQ(p.geometry.region, 4 * MiB / kVecBytes);
    EXPECT_EQ(p.variant, tpcommVariantP2pOneShotPull);  // one step, but a partial vector

    f.forced_algo = tpcommAlgoTwoShotPull;
    const size_t slot_vecs = pullSlotBytes(16 * MiB) / kVecBytes;
    EXPECT_EQ(f.slots.pull_chunk_vecs, slot_vecs / (world + 1) * world) << "world " << world;
    p = planCall(f, Call{64 * MiB, true});
    EXPECT_EQ(p.geometry.region + p.geometry.nsteps + p.geometry.per, 0u);
    const ChunkedCall k = chunkedCall(slot_vecs, world + 1, world, 64 * MiB / kVecBytes,
                                      p.chunk_vecs, static_cast<unsigned>(p.grid.blocks));
    EXPECT_EQ(k.chunk_vecs, p.chunk_vecs) << "the kernel would take shorter steps than planned";
    EXPECT_LE(k.seg_cap * (world + 1), slot_vecs);
    // Its grid is the push two-shot's: a block owns a sub-range of each of world segments.
    const GridPlan push =
        planGrid(tpcommAlgoTwoShot, 64 * MiB, p.chunk_vecs * kVecBytes, world, f.knobs);
    EXPECT_EQ(p.grid.blocks, push.blocks);
    EXPECT_EQ(p.grid.threads, push.threads);
  }
}

TEST(PullPlan, HostMemoryHasNoPullVariant) {
  for (int algo : {tpcommAlgoOneShotPull, tpcommAlgoTwoShotPull}) {
    const CallPlan p = planCall(factsFor(4, Fabric::kHost, algo), Call{4 * KiB, true});
    EXPECT_EQ(p.decision.error, tpcommUnsupported);
    EXPECT_EQ(p.variant, tpcommVariantNone);
    EXPECT_TRUE(contains(p.decision.reason, std::string("forced algorithm ") +
                                                tpcommAlgoName(algo) + " cannot run: peer-to-peer"))
        << p.decision.reason;
  }
}

// Without the probe's verdict no default ever pulls: NVLink and PCIe keep their push tables.
TEST(PullPlan, DefaultsNeverPullWithoutTheVerdict) {
  for (Fabric fabric : {Fabric::kNvlink, Fabric::kPcie, Fabric::kHost})
    for (int world = 2; world <= 8; ++world)
      for (size_t bytes = 16; bytes <= 64 * MiB; bytes *= 4) {
        CommFacts f = factsFor(world, fabric);
        f.two_islands = fabric == Fabric::kPcie && world >= 6 && world % 2 == 0;
        const CallPlan p = planCall(f, Call{bytes, true});
        EXPECT_FALSE(isPullAlgo(p.decision.algo)) << fabricName(fabric) << " world " << world
                                                  << ", " << bytes << ": " << p.decision.reason;
      }
}

// A write collapse over PCIe takes the pull tables (one-shot and two-shot pull, NCCL from about
// 1 MiB at 8 ranks, or with two islands island_pull: never the push island, whose legs push) and
// the reason names the verdict; NVLink and host memory ignore it, and a tuned table (which names
// its algorithms) is obeyed.
TEST(PullPlan, TheProbeVerdictTurnsPushIntoPull) {
  struct Row {
    Fabric fabric;
    int world;
    bool islands;
    size_t bytes;
    tpcommVariant_t want;
  };
  const Row rows[] = {
      {Fabric::kPcie, 8, false, 14 * KiB, tpcommVariantP2pOneShotPullLL},
      {Fabric::kPcie, 8, false, 14 * KiB + 2, tpcommVariantP2pOneShotPullLL},
      {Fabric::kPcie, 8, false, 24 * KiB, tpcommVariantP2pOneShotPullLean},
      {Fabric::kPcie, 8, false, 24 * KiB + 2, tpcommVariantP2pOneShotPull},
      {Fabric::kPcie, 8, false, 512 * KiB, tpcommVariantP2pTwoShotPull},
      {Fabric::kPcie, 8, false, 16 * MiB, tpcommVariantNccl},
      {Fabric::kPcie, 2, false, 64 * KiB, tpcommVariantP2pOneShotPullLean},
      {Fabric::kPcie, 2, false, 64 * MiB, tpcommVariantP2pTwoShotPull},
      {Fabric::kPcie, 8, true, 64 * MiB, tpcommVariantIslandPull},
      {Fabric::kPcie, 8, true, 512 * KiB, tpcommVariantP2pTwoShotPull},
      {Fabric::kNvlink, 2, false, 64 * MiB, tpcommVariantP2pOneShot},
      {Fabric::kHost, 2, false, 16 * KiB, tpcommVariantHostOneShotSentinelLean},
  };
  for (const Row& r : rows) {
    CommFacts f = factsFor(r.world, r.fabric);
    f.two_islands = r.islands;
    f.fabric_verdict = FabricVerdict::kWriteCollapse;
    const CallPlan p = planCall(f, Call{r.bytes, true});
    EXPECT_EQ(p.variant, r.want) << fabricName(r.fabric) << " world " << r.world << ", " << r.bytes
                                 << ": got " << tpcommVariantName(p.variant) << " ("
                                 << p.decision.reason << ")";
    EXPECT_EQ(contains(p.decision.reason, "(fabric probe: write_collapse)"),
              r.fabric == Fabric::kPcie)
        << p.decision.reason;
  }
  CommFacts f = factsFor(8, Fabric::kPcie);
  f.fabric_verdict = FabricVerdict::kWriteCollapse;
  const SizeTable tuned = {{SIZE_MAX, tpcommAlgoOneShot}};
  f.tuned = &tuned;
  EXPECT_EQ(planCall(f, Call{4 * KiB, true}).variant, tpcommVariantP2pOneShotLean)
      << "a tuned table's algorithm is measured, not rewritten";
}

TEST(PullPlan, TpcommAlgoTakesTheNames) {
  EXPECT_STREQ(tpcommAlgoName(tpcommAlgoOneShotPull), "oneshot_pull");
  EXPECT_STREQ(tpcommAlgoName(tpcommAlgoTwoShotPull), "twoshot_pull");
  EXPECT_EQ(tpcommAlgoName(tpcommNumAlgos), nullptr);
  EXPECT_STREQ(tpcommVariantName(tpcommVariantP2pOneShotPullLean), "p2p_oneshot_pull_lean");
  EXPECT_STREQ(tpcommVariantName(tpcommVariantP2pOneShotPull), "p2p_oneshot_pull");
  EXPECT_STREQ(tpcommVariantName(tpcommVariantP2pTwoShotPull), "p2p_twoshot_pull");
  for (const auto& [text, want] : std::map<std::string, int>{
           {"oneshot_pull", tpcommAlgoOneShotPull}, {"twoshot_pull", tpcommAlgoTwoShotPull}}) {
    EXPECT_EQ(parseAlgoName(text), want) << text;
    const Env e = parseEnvironment([&text](const char* name) -> const char* {
      return std::string(name) == "TPCOMM_ALGO" ? text.c_str() : nullptr;
    });
    EXPECT_EQ(e.algo, want) << text;
  }
  EXPECT_EQ(parseAlgoName("pull"), -1);
}

// `tpcomm doctor` previews the pull variant per size where the verdict says so, and a forced one.
TEST(PullPlan, DoctorPreviewNamesThePullVariant) {
  cli::PreviewOptions o;
  o.nccl_available = true;
  o.fabric_verdict = FabricVerdict::kWriteCollapse;
  bool saw_pcie = false;
  for (const cli::PreviewWorld& w : cli::previewHypothetical(o)) {
    if (w.fabric != Fabric::kPcie || w.world != 8) continue;
    saw_pcie = true;
    ASSERT_EQ(w.rows.size(), 9u);                                      // 1 KiB .. 64 MiB
    EXPECT_EQ(w.rows.front().variant, tpcommVariantP2pOneShotPullLL);  // 1 KiB
    EXPECT_EQ(w.rows[4].variant, tpcommVariantP2pTwoShotPull);         // 256 KiB
    EXPECT_EQ(w.rows.back().variant, tpcommVariantNccl);               // 64 MiB
  }
  EXPECT_TRUE(saw_pcie);
  o.fabric_verdict = FabricVerdict::kUnknown;
  o.forced_algo = tpcommAlgoTwoShotPull;
  for (const cli::PreviewWorld& w : cli::previewHypothetical(o))
    for (const cli::PreviewRow& r : w.rows)
      EXPECT_EQ(r.variant,
                w.fabric == Fabric::kHost ? tpcommVariantNone : tpcommVariantP2pTwoShotPull)
          << fabricName(w.fabric) << " " << r.bytes << ": " << r.decision.reason;
}

// With a pull all-reduce the fused call pulls too (fused_pull.cu), over the same wire, and says so.
TEST(PullPlan, FusedCallsOverPullFuseOverPull) {
  CommFacts f = factsFor(8, Fabric::kPcie);
  f.fabric_verdict = FabricVerdict::kWriteCollapse;
  const CallPlan plan = planCall(f, fusedCall(1, 7168, tpcommBfloat16, false));
  const EpiloguePlan& p = plan.epilogue;
  EXPECT_EQ(plan.variant, tpcommVariantP2pOneShotPullLL);    // 14 KiB: LL entries
  EXPECT_EQ(p.variant, tpcommVariantFusedP2pOneShotPullLL);  // the same wire (knob fused_pull_ll)
  EXPECT_TRUE(contains(p.reason, "by pulls, LL entries")) << p.reason;
  f.knobs.fused_pull_ll = false;
  const EpiloguePlan flag = planCall(f, fusedCall(1, 7168, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(flag.variant, tpcommVariantFusedP2pOneShotPull);
  EXPECT_TRUE(contains(flag.reason, "by pulls, a flag per block")) << flag.reason;
}

}  // namespace
}  // namespace tpcomm
