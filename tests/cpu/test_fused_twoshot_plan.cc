// The fused two-shot over pull (src/kernels/fused_twoshot_pull.cu, its layout
// src/kernels/layout/fused_twoshot_layout.h, its rule in src/plan/fused_plan.cc): every row in
// exactly one rank's run of exactly one step, the areas of a slot distinct and inside it, and the
// planner taking it where the all-reduce pulls or pushes over NVLink, from fused_twoshot_rows rows
// and beyond one step of the one-shot; over PCIe pushes the push form instead
// (test_fused_twoshot_push_plan.cc).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "kernels/fused_oneshot.h"
#include "kernels/layout/fused_twoshot_layout.h"
#include "kernels/runtime/variant_table.h"
#include "plan/fused_plan.h"
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

CommFacts collapsed(int world) {
  CommFacts f = factsFor(world, Fabric::kPcie);
  f.fabric_verdict = FabricVerdict::kWriteCollapse;
  return f;
}

bool pulls(tpcommVariant_t v) {
  const VariantRow* r = variantRow(v);
  return r && r->pull && r->transport == VariantTransport::kPeer;
}

std::string what(int w, size_t t, size_t h, const EpiloguePlan& e) {
  return "world " + std::to_string(w) + " T=" + std::to_string(t) + " H=" + std::to_string(h) +
         ": " + tpcommVariantName(e.variant) + " (" + e.reason + ")";
}

// Every row lands in one run of one step, runs are consecutive and at most a step's area rows,
// and every step fits the slot: areas (from, owner) for owner != from are 0 .. world - 2, each
// once, the reduced area after them.
TEST(FusedTwoShotLayout, EveryRowOnceAndEveryAreaInsideTheSlot) {
  for (int world = 2; world <= 8; ++world)
    for (size_t hv : {size_t{1}, size_t{7}, size_t{512}, size_t{896}, size_t{1024}})
      for (size_t slot_vecs : {hv * world, hv * world * 3 + 5, size_t{262144}})
        for (size_t rows : {size_t{1}, size_t{2}, size_t{63}, size_t{64}, size_t{1000}}) {
          const FusedTwoShotSteps k = fusedTwoShotSteps(slot_vecs, hv, world, rows);
          ASSERT_GE(k.area_rows, 1u);
          EXPECT_LE(k.area_rows * hv * world, slot_vecs);  // world - 1 areas + the reduced one
          std::vector<int> seen(rows, 0);
          for (size_t s = 0; s < k.nsteps; ++s) {
            const FusedTwoShotStep st = fusedTwoShotStep(k, s, world, rows);
            ASSERT_GT(st.len, 0u);
            EXPECT_LE(st.run, k.area_rows);
            size_t next = 0;
            for (int d = 0; d < world; ++d) {
              EXPECT_EQ(st.runBegin(d), next);
              next += st.runLen(d);
              for (size_t i = 0; i < st.runLen(d); ++i) ++seen[st.first + st.runBegin(d) + i];
            }
            EXPECT_EQ(next, st.len);
          }
          for (size_t r = 0; r < rows; ++r) ASSERT_EQ(seen[r], 1) << "row " << r;
        }
  for (int world = 2; world <= 8; ++world)
    for (int from = 0; from < world; ++from) {
      std::set<int> areas;
      for (int owner = 0; owner < world; ++owner)
        if (owner != from) areas.insert(fusedTwoShotArea(from, owner, world));
      EXPECT_EQ(areas.size(), static_cast<size_t>(world - 1));
      EXPECT_EQ(*areas.begin(), 0);
      EXPECT_EQ(*areas.rbegin(), world - 2);
    }
  EXPECT_EQ(fusedTwoShotSteps(7, 4, 2, 10).area_rows, 0u);  // a slot without a row per rank
}

// The box (write collapse): from fused_twoshot_rows rows (twice as many at two ranks)
// the two-shot, below it the one-shot, at every world and in FP8, wherever the all-reduce of the
// same bytes pulls (beyond about 1 MiB the default table sends it to NCCL at 3+ ranks, and the
// fused call follows it, unfused); its grid takes a block per row of a run.
TEST(FusedTwoShotPlan, WriteCollapseTakesItFromTheKnobsRows) {
  int checked = 0;
  for (int w = 2; w <= 8; ++w)
    for (size_t t : {size_t{1}, size_t{16}, size_t{63}, size_t{64}, size_t{127}, size_t{128}})
      for (bool fp8 : {false, true}) {
        const CommFacts f = collapsed(w);
        ASSERT_EQ(f.knobs.fused_twoshot_rows, -1);  // unset: 64, no tuning table
        const CallPlan p = planCall(f, fusedCall(t, 7168, tpcommBfloat16, fp8));
        if (!pulls(p.variant)) continue;  // NCCL's (checked below), not this test's
        const EpiloguePlan& e = p.epilogue;
        ++checked;
        const bool two = t >= (w == 2 ? 128u : 64u);
        // The one-shot over LL entries where the all-reduce takes them (one row: 14 KiB).
        const bool ll = p.variant == tpcommVariantP2pOneShotPullLL;
        const tpcommVariant_t want =
            two ? (fp8 ? tpcommVariantFusedP2pTwoShotPullFp8 : tpcommVariantFusedP2pTwoShotPull)
            : ll
                ? (fp8 ? tpcommVariantFusedP2pOneShotPullLLFp8 : tpcommVariantFusedP2pOneShotPullLL)
                : (fp8 ? tpcommVariantFusedP2pOneShotPullFp8 : tpcommVariantFusedP2pOneShotPull);
        EXPECT_EQ(e.variant, want) << what(w, t, 7168, e);
        EXPECT_TRUE(e.one_pass) << what(w, t, 7168, e);
        if (two) {
          EXPECT_EQ(e.blocks, static_cast<int>((t + w - 1) / w)) << what(w, t, 7168, e);
          EXPECT_NE(e.reason.find("fused two-shot"), std::string::npos) << e.reason;
        }
      }
  EXPECT_GE(checked, 7 * 4 * 2 + 2 * 2);  // every world up to 64 rows, 127 and 128 at two
}

// Beyond one step of the one-shot (4 MiB outbox slots here: 292 rows of 7168 bf16) the two-shot
// takes the call in as many steps as it needs; with the knob at 0 such a call goes unfused and
// says why.
TEST(FusedTwoShotPlan, BeyondAStepOfTheOneShot) {
  CommFacts f = collapsed(8);
  f.forced_algo = tpcommAlgoTwoShotPull;  // auto sends 14 MiB to NCCL here
  const size_t t = 1024;                  // 14 MiB
  EpiloguePlan e = planCall(f, fusedCall(t, 7168, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantFusedP2pTwoShotPull) << e.reason;
  const FusedTwoShotSteps k = fusedTwoShotSteps(e.region, 7168 * 2 / 16, 8, t);
  EXPECT_GT(k.nsteps, 1u) << e.reason;
  EXPECT_NE(e.reason.find(std::to_string(k.nsteps) + " step(s)"), std::string::npos) << e.reason;
  f.knobs.fused_twoshot_rows = 0;
  e = planCall(f, fusedCall(t, 7168, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantAddRmsNorm) << e.reason;
  EXPECT_NE(e.reason.find("exceed one step"), std::string::npos) << e.reason;
  e = planCall(f, fusedCall(128, 7168, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantFusedP2pOneShotPull) << e.reason;
  // The plain default: where auto sends the all-reduce to NCCL the fused call follows, unfused.
  e = planCall(collapsed(8), fusedCall(t, 7168, tpcommBfloat16, false)).epilogue;
  EXPECT_NE(e.reason.find("nccl"), std::string::npos) << e.reason;
}

// A tuning table's measured crossover (tpcomm tune: fused_twoshot_rows per world) steers the
// planner where the knob is unset, as it is, not doubled at two ranks; "inf" keeps the one-shot
// within a step and the two-shot beyond it; a knob the user sets wins over the table.
TEST(FusedTwoShotPlan, TheTuningTablesCrossoverUnlessTheKnobIsSet) {
  const auto variant = [](const CommFacts& f, size_t t) {
    return planCall(f, fusedCall(t, 7168, tpcommBfloat16, false)).epilogue.variant;
  };
  for (int w : {2, 4, 8}) {
    CommFacts f = collapsed(w);
    f.tuned_fused_twoshot_rows = 16;
    EXPECT_EQ(variant(f, 15), tpcommVariantFusedP2pOneShotPull) << w;
    EXPECT_EQ(variant(f, 16), tpcommVariantFusedP2pTwoShotPull) << w;
    EXPECT_EQ(variant(f, 40), tpcommVariantFusedP2pTwoShotPull) << w;
    f.knobs.fused_twoshot_rows = 64;  // set by the user: the table is not asked
    EXPECT_EQ(variant(f, 40), tpcommVariantFusedP2pOneShotPull) << w;
    f.knobs.fused_twoshot_rows = 0;
    EXPECT_EQ(variant(f, 40), tpcommVariantFusedP2pOneShotPull) << w;
  }
  CommFacts f = collapsed(8);
  f.forced_algo = tpcommAlgoTwoShotPull;  // auto sends 14 MiB to NCCL here
  f.tuned_fused_twoshot_rows = SIZE_MAX;  // the one-shot held at every count measured
  EXPECT_EQ(variant(f, 256), tpcommVariantFusedP2pOneShotPull);
  EXPECT_EQ(variant(f, 1024), tpcommVariantFusedP2pTwoShotPull);  // beyond one step
  f.tuned_fused_twoshot_rows = 0;                                 // none: the default, 64
  EXPECT_EQ(variant(f, 63), tpcommVariantFusedP2pOneShotPull);
  EXPECT_EQ(variant(f, 64), tpcommVariantFusedP2pTwoShotPull);
}

// A tuning table that measured the unfused pair faster at few rows (tpcomm tune:
// fused_unfused_below) runs those calls unfused and says why; a fused row forced by name still
// runs there; "inf" runs every fused call unfused.
TEST(FusedTwoShotPlan, TheTuningTableRunsThePairWhereItMeasuredItFaster) {
  for (Fabric fabric : {Fabric::kNvlink, Fabric::kPcie}) {
    CommFacts f = fabric == Fabric::kPcie ? collapsed(8) : factsFor(8, fabric);
    const tpcommVariant_t fused =
        planCall(f, fusedCall(1, 7168, tpcommBfloat16, false)).epilogue.variant;
    const tpcommVariant_t fused4 =
        planCall(f, fusedCall(4, 7168, tpcommBfloat16, false)).epilogue.variant;
    ASSERT_NE(fused, tpcommVariantAddRmsNorm);
    f.tuned_fused_unfused_below = 4;
    for (size_t t : {size_t{1}, size_t{3}}) {
      const CallPlan p = planCall(f, fusedCall(t, 7168, tpcommBfloat16, false));
      EXPECT_EQ(p.epilogue.variant, tpcommVariantAddRmsNorm) << p.epilogue.reason;
      EXPECT_NE(p.epilogue.reason.find("tuning table measured that pair faster below 4 rows"),
                std::string::npos)
          << p.epilogue.reason;
    }
    EXPECT_EQ(planCall(f, fusedCall(4, 7168, tpcommBfloat16, false)).epilogue.variant, fused4);
    CommFacts forced = f;
    forced.knobs.variant = fused;
    const CallPlan p = planCall(forced, fusedCall(1, 7168, tpcommBfloat16, false));
    EXPECT_EQ(p.decision.error, tpcommSuccess) << p.decision.reason;
    EXPECT_EQ(p.epilogue.variant, fused) << p.epilogue.reason;
    f.tuned_fused_unfused_below = SIZE_MAX;
    const CallPlan all = planCall(f, fusedCall(64, 7168, tpcommBfloat16, false));
    EXPECT_EQ(all.epilogue.variant, tpcommVariantAddRmsNorm) << all.epilogue.reason;
    EXPECT_NE(all.epilogue.reason.find("at every row count"), std::string::npos);
  }
}

// Where the all-reduce pushes over NVLink the two-shot takes the same row counts (measured on
// one H200 against the push one-shot); over PCIe without the write-collapse verdict it never
// does by itself (loads there are unmeasured), but TPCOMM_KNOBS=variant=<name> reaches both rows
// there; rows beyond its registers stay with the push one-shot. The island schedule keeps what
// it had (test_island_pull_plan.cc).
TEST(FusedTwoShotPlan, NvlinkTakesItPcieOnlyByNameRegistersBound) {
  for (int w : {2, 4, 8})
    for (size_t t : {size_t{63}, size_t{64}, size_t{128}, size_t{1024}}) {
      const EpiloguePlan e =
          planCall(factsFor(w, Fabric::kNvlink), fusedCall(t, 7168, tpcommBfloat16, false))
              .epilogue;
      const bool two = t >= (w == 2 ? 128u : 64u);
      EXPECT_EQ(e.variant == tpcommVariantFusedP2pTwoShotPull, two) << what(w, t, 7168, e);
      const EpiloguePlan q =
          planCall(factsFor(w, Fabric::kPcie), fusedCall(t, 7168, tpcommBfloat16, false)).epilogue;
      EXPECT_NE(q.variant, tpcommVariantFusedP2pTwoShotPull) << what(w, t, 7168, q);
    }
  CommFacts f = factsFor(4, Fabric::kPcie);
  for (tpcommVariant_t v :
       {tpcommVariantFusedP2pTwoShotPull, tpcommVariantFusedP2pTwoShotPullFp8}) {
    f.knobs.variant = v;
    const bool fp8 = v == tpcommVariantFusedP2pTwoShotPullFp8;
    const EpiloguePlan e = planCall(f, fusedCall(3, 4096, tpcommBfloat16, fp8)).epilogue;
    EXPECT_EQ(e.variant, v) << e.reason;
    EXPECT_EQ(e.reason.rfind("variant=", 0), 0u) << e.reason;
  }
  // 16384 bf16: 2048 vectors a row, beyond the two-shot's 1024.
  EpiloguePlan e =
      planCall(factsFor(2, Fabric::kNvlink), fusedCall(256, 16384, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantFusedP2pOneShot) << e.reason;
  CommFacts g = collapsed(4);
  g.knobs.fused_twoshot_rows = 1;
  e = planCall(g, fusedCall(16, 16384, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantAddRmsNorm) << e.reason;
  EXPECT_NE(e.reason.find("registers"), std::string::npos) << e.reason;
}

TEST(FusedTwoShotPlan, EveryRowHasItsOnePassKernel) {
  for (tpcommVariant_t v : {tpcommVariantFusedP2pTwoShotPull, tpcommVariantFusedP2pTwoShotPullFp8})
    for (int w : {2, 4, 8})
      for (int d = 0; d < kNumDtypes; ++d) {
        EXPECT_NE(variantKernel(v, w, d), nullptr) << tpcommVariantName(v) << " world " << w;
        EXPECT_EQ(variantOnePassKernel(v, w, d), variantKernel(v, w, d)) << tpcommVariantName(v);
        EXPECT_EQ(variantClusterKernel(v, w, d), nullptr) << tpcommVariantName(v);
      }
}

// fused_twoshot_rows=1 means always (plan/knobs.h): not doubled at two ranks, where any other
// count is, so a single row takes the two-shot there as at four ranks.
TEST(FusedTwoShotPlan, KnobOfOneTakesItFromOneRowAtTwoRanksToo) {
  for (int w : {2, 4}) {
    CommFacts f = factsFor(w, Fabric::kNvlink);
    f.knobs.fused_twoshot_rows = 1;
    const EpiloguePlan e = planCall(f, fusedCall(1, 7168, tpcommBfloat16, false)).epilogue;
    EXPECT_EQ(e.variant, tpcommVariantFusedP2pTwoShotPull) << what(w, 1, 7168, e);
  }
  CommFacts f = factsFor(2, Fabric::kNvlink);
  f.knobs.fused_twoshot_rows = 2;  // doubled at two ranks: from 4 rows
  EXPECT_EQ(planCall(f, fusedCall(3, 7168, tpcommBfloat16, false)).epilogue.variant,
            tpcommVariantFusedP2pOneShot);
  EXPECT_EQ(planCall(f, fusedCall(4, 7168, tpcommBfloat16, false)).epilogue.variant,
            tpcommVariantFusedP2pTwoShotPull);
}

}  // namespace
}  // namespace tpcomm
