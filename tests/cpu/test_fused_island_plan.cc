// The fused islands, over pull (src/kernels/fused_island_pull.cu) and over pushes
// (src/kernels/fused_twoshot_push.cu), their layout src/kernels/layout/fused_twoshot_layout.h and
// their rule in src/plan/fused_plan.cc: every row in exactly one member's run of exactly one step,
// the areas of a slot distinct and inside it, and the planner taking the pull form wherever the
// all-reduce is island_pull (the two-socket box with the write-collapse verdict) and the
// push form wherever it is the push island (the same box, its peer stores healthy), at every size,
// FP8 included; what they cannot take goes unfused and says why.
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

constexpr size_t kH = 7168;  // the rows, bf16

// The box: PCIe, two real islands (sockets), the fabric probe's write-collapse verdict.
CommFacts twoSocketsCollapsed(int world) {
  CommFacts f = factsFor(world, Fabric::kPcie);
  f.two_islands = true;
  f.fabric_verdict = FabricVerdict::kWriteCollapse;
  return f;
}
// The same box with healthy peer stores (no verdict): the all-reduce pushes.
CommFacts twoSocketsHealthy(int world) {
  CommFacts f = factsFor(world, Fabric::kPcie);
  f.two_islands = true;
  return f;
}

std::string what(int w, size_t t, const CallPlan& p) {
  return "world " + std::to_string(w) + " T=" + std::to_string(t) + ": " +
         tpcommVariantName(p.variant) + " then " + tpcommVariantName(p.epilogue.variant) + " (" +
         p.epilogue.reason + ")";
}

// m + 2 areas of area_rows rows fit the slot; every row once; the steps' runs consecutive.
TEST(FusedIslandLayout, EveryRowOnceAndEveryAreaInsideTheSlot) {
  for (int m : {2, 3, 4})
    for (size_t hv : {size_t{1}, size_t{7}, size_t{896}, size_t{1024}})
      for (size_t slot_vecs : {hv * (m + 2), hv * (m + 2) * 3 + 5, size_t{131072}})
        for (size_t rows : {size_t{1}, size_t{5}, size_t{64}, size_t{1000}}) {
          const FusedTwoShotSteps k = fusedIslandSteps(slot_vecs, hv, m, rows);
          ASSERT_GE(k.area_rows, 1u);
          EXPECT_LE(k.area_rows * hv * fusedIslandAreas(m), slot_vecs);
          EXPECT_EQ(k.step_rows, k.area_rows * m);
          std::vector<int> seen(rows, 0);
          for (size_t s = 0; s < k.nsteps; ++s) {
            const FusedTwoShotStep st = fusedTwoShotStep(k, s, m, rows);
            ASSERT_GT(st.len, 0u);
            EXPECT_LE(st.run, k.area_rows);
            size_t next = 0;
            for (int d = 0; d < m; ++d) {
              EXPECT_EQ(st.runBegin(d), next);
              next += st.runLen(d);
              for (size_t i = 0; i < st.runLen(d); ++i) ++seen[st.first + st.runBegin(d) + i];
            }
            EXPECT_EQ(next, st.len);
          }
          for (size_t r = 0; r < rows; ++r) ASSERT_EQ(seen[r], 1) << "row " << r;
        }
  EXPECT_EQ(fusedIslandSteps(5 * 7 - 1, 7, 3, 10).area_rows, 0u);  // 5 areas of a row: 35 vectors
}

// The push forms' slot: RS and AG areas per owner, and the island's X (two areas: a run's fp32
// partial, up to two vectors a data vector) after them, inside the slot.
TEST(FusedIslandLayout, ThePushIslandsAreasFitItsSlot) {
  EXPECT_EQ(fusedPushAreas(4, false), 8);
  EXPECT_EQ(fusedPushAreas(2, true), 6);
  for (int m : {2, 3, 4})
    for (size_t hv : {size_t{1}, size_t{448}, size_t{1024}})
      for (size_t slot_vecs : {hv * (2 * m + 2), size_t{65536}}) {
        const FusedTwoShotSteps k =
            fusedRunSteps(slot_vecs, hv, m, fusedPushAreas(m, true), size_t{100});
        ASSERT_GE(k.area_rows, 1u);
        const size_t area = k.area_rows * hv;
        EXPECT_LE(2 * m * area + 2 * area, slot_vecs);  // X's end: 2 fp32 vectors a data vector
      }
}

// The done-when of the fused-fabric issue: with real islands and the write-collapse verdict the
// planner picks a fused pull variant at worlds 4..8 (even): the fused pull one-shot or two-shot
// where the all-reduce pulls flat (up to 1 MiB), the fused island where it is island_pull (above
// 1 MiB at 6 and 8 ranks; the default table sends 4 ranks to NCCL there, and the fused call
// follows it, unfused), in FP8 too; never a push. Its grid: a block per row of a member's run.
TEST(FusedIslandPlan, RealIslandsAndCollapseTakeAFusedPullVariant) {
  int islands = 0;
  for (int w : {4, 6, 8})
    for (size_t t :
         {size_t{1}, size_t{4}, size_t{16}, size_t{64}, size_t{75}, size_t{256}, size_t{1024}})
      for (bool fp8 : {false, true}) {
        const CallPlan p = planCall(twoSocketsCollapsed(w), fusedCall(t, kH, tpcommBfloat16, fp8));
        ASSERT_EQ(p.decision.error, tpcommSuccess) << what(w, t, p);
        if (p.variant == tpcommVariantNccl && w == 4 && t * kH * 2 > (size_t{1} << 20)) continue;
        const VariantRow* r = variantRow(p.epilogue.variant);
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->collective, VariantCollective::kFused) << what(w, t, p);
        EXPECT_TRUE(r->pull) << what(w, t, p);
        if (p.variant != tpcommVariantIslandPull) continue;
        ++islands;
        EXPECT_GT(t * kH * 2, size_t{1} << 20) << what(w, t, p);
        EXPECT_EQ(p.epilogue.variant,
                  fp8 ? tpcommVariantFusedP2pIslandPullFp8 : tpcommVariantFusedP2pIslandPull)
            << what(w, t, p);
        EXPECT_TRUE(p.epilogue.one_pass) << what(w, t, p);
        EXPECT_NE(p.epilogue.reason.find("fused island"), std::string::npos) << what(w, t, p);
        const size_t m = static_cast<size_t>(w / 2);
        const FusedTwoShotSteps k = fusedIslandSteps(p.epilogue.region, kH * 2 / 16, w / 2, t);
        const size_t run = (std::min(t, k.step_rows) + m - 1) / m;
        EXPECT_EQ(p.epilogue.blocks, static_cast<int>(std::min<size_t>(run, kDefaultMaxBlocks)))
            << what(w, t, p);
      }
  EXPECT_EQ(islands, 2 * 3 * 2);  // 75, 256, 1024 rows at 6 and 8 ranks (64 rows: 896 KiB)
}

// Forced by name, it runs on any communicator with an island split (even worlds from 4) and is
// refused elsewhere, naming the planner's own choice. In many steps where the call needs them.
TEST(FusedIslandPlan, ForcedByNameWhereIslandsExistRefusedElsewhere) {
  for (int w : {4, 6, 8}) {
    CommFacts f = factsFor(w, Fabric::kNvlink);
    f.knobs.variant = tpcommVariantFusedP2pIslandPull;
    const CallPlan p = planCall(f, fusedCall(2048, kH, tpcommBfloat16, false));
    EXPECT_EQ(p.epilogue.variant, tpcommVariantFusedP2pIslandPull) << what(w, 2048, p);
    EXPECT_EQ(p.epilogue.reason.rfind("variant=", 0), 0u) << p.epilogue.reason;
    const FusedTwoShotSteps k = fusedIslandSteps(p.epilogue.region, kH * 2 / 16, w / 2, 2048);
    EXPECT_GT(k.nsteps, 1u) << p.epilogue.reason;
  }
  for (int w : {2, 3, 5}) {
    CommFacts f = factsFor(w, Fabric::kNvlink);
    f.knobs.variant = tpcommVariantFusedP2pIslandPull;
    const CallPlan p = planCall(f, fusedCall(4, kH, tpcommBfloat16, false));
    EXPECT_EQ(p.decision.error, tpcommUnsupported) << w;
    EXPECT_NE(p.decision.reason.find("cannot take this call"), std::string::npos)
        << p.decision.reason;
  }
}

// Rows beyond the registers, and a pull slot too small to hold one row per area (a small
// TPCOMM_BUFFER_BYTES), go unfused and say why, for the island and the two-shot alike: a kernel
// with no step would leave its outputs unwritten.
TEST(FusedIslandPlan, WhatItCannotHoldGoesUnfusedSayingWhy) {
  CommFacts f = twoSocketsCollapsed(8);
  f.forced_algo = tpcommAlgoIslandPull;
  EpiloguePlan e = planCall(f, fusedCall(16, 16384, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantAddRmsNorm) << e.reason;
  EXPECT_NE(e.reason.find("registers"), std::string::npos) << e.reason;
  f.slots.pull_step_bytes = 4096;  // the smallest pull slot (device_comm.h, pullSlotBytes)
  e = planCall(f, fusedCall(16, 4096, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantAddRmsNorm) << e.reason;
  EXPECT_NE(e.reason.find("cannot hold a row"), std::string::npos) << e.reason;
  CommFacts g = factsFor(4, Fabric::kNvlink);
  g.slots.pull_step_bytes = 4096;
  g.knobs.variant = tpcommVariantFusedP2pTwoShotPull;
  const CallPlan p = planCall(g, fusedCall(256, 4096, tpcommBfloat16, false));
  EXPECT_EQ(p.decision.error, tpcommUnsupported) << p.decision.reason;
}

// The healthy box: the fused push island wherever the all-reduce is the push island (above 1 MiB
// at 6 and 8 ranks, where the one-shot's step no longer holds the call: these calls ran unfused
// before it), a push one-shot or two-shot below; never a pull. Its grid: a block per row of a
// member's run.
TEST(FusedIslandPlan, RealIslandsWithoutCollapseTakeTheFusedPushIsland) {
  int islands = 0;
  for (int w : {6, 8})
    for (size_t t : {size_t{1}, size_t{16}, size_t{64}, size_t{75}, size_t{256}, size_t{1024}})
      for (bool fp8 : {false, true}) {
        const CallPlan p = planCall(twoSocketsHealthy(w), fusedCall(t, kH, tpcommBfloat16, fp8));
        ASSERT_EQ(p.decision.error, tpcommSuccess) << what(w, t, p);
        const VariantRow* r = variantRow(p.epilogue.variant);
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->collective, VariantCollective::kFused) << what(w, t, p);
        EXPECT_FALSE(r->pull) << what(w, t, p);
        EXPECT_EQ(p.variant == tpcommVariantIsland, t * kH * 2 > (size_t{1} << 20))
            << what(w, t, p);
        if (p.variant != tpcommVariantIsland) continue;
        ++islands;
        EXPECT_EQ(p.epilogue.variant,
                  fp8 ? tpcommVariantFusedP2pIslandFp8 : tpcommVariantFusedP2pIsland)
            << what(w, t, p);
        EXPECT_TRUE(p.epilogue.one_pass) << what(w, t, p);
        EXPECT_NE(p.epilogue.reason.find("fused island over"), std::string::npos) << what(w, t, p);
        const size_t m = static_cast<size_t>(w / 2), hv = kH * 2 / 16;
        const FusedTwoShotSteps k =
            fusedRunSteps(p.epilogue.region, hv, w / 2, fusedPushAreas(w / 2, true), t);
        ASSERT_GE(k.area_rows, 1u);
        const size_t run = (std::min(t, k.step_rows) + m - 1) / m;
        EXPECT_EQ(p.epilogue.blocks, static_cast<int>(std::min<size_t>(run, kDefaultMaxBlocks)))
            << what(w, t, p);
      }
  EXPECT_EQ(islands, 2 * 3 * 2);  // 75, 256, 1024 rows at 6 and 8 ranks
}

// Forced by name, the push island too runs wherever there is an island split, in many steps.
TEST(FusedIslandPlan, ThePushIslandForcedByNameWhereIslandsExist) {
  for (int w : {4, 6, 8}) {
    CommFacts f = factsFor(w, Fabric::kNvlink);
    f.knobs.variant = tpcommVariantFusedP2pIsland;
    const CallPlan p = planCall(f, fusedCall(2048, kH, tpcommBfloat16, false));
    EXPECT_EQ(p.variant, tpcommVariantIsland) << what(w, 2048, p);
    EXPECT_EQ(p.epilogue.variant, tpcommVariantFusedP2pIsland) << what(w, 2048, p);
    const FusedTwoShotSteps k =
        fusedRunSteps(p.epilogue.region, kH * 2 / 16, w / 2, fusedPushAreas(w / 2, true), 2048);
    EXPECT_GT(k.nsteps, 1u) << p.epilogue.reason;
  }
  CommFacts f = factsFor(3, Fabric::kNvlink);
  f.knobs.variant = tpcommVariantFusedP2pIsland;
  EXPECT_EQ(planCall(f, fusedCall(4, kH, tpcommBfloat16, false)).decision.error, tpcommUnsupported);
}

// A push slot too small for a row in each of the island's 2m + 2 areas goes unfused, saying why.
TEST(FusedIslandPlan, APushSlotThatCannotHoldARowGoesUnfused) {
  CommFacts f = twoSocketsHealthy(8);
  f.forced_algo = tpcommAlgoIsland;
  f.slots.twoshot_chunk_vecs = 2048;  // 2 x 32 KiB: 10 areas of 7168 bf16 do not fit
  const EpiloguePlan e = planCall(f, fusedCall(16, kH, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantAddRmsNorm) << e.reason;
  EXPECT_NE(e.reason.find("cannot hold a row"), std::string::npos) << e.reason;
}

TEST(FusedIslandPlan, TheIslandWorldsHaveTheirOnePassKernels) {
  for (tpcommVariant_t v : {tpcommVariantFusedP2pIslandPull, tpcommVariantFusedP2pIslandPullFp8,
                            tpcommVariantFusedP2pIsland, tpcommVariantFusedP2pIslandFp8})
    for (int w = 2; w <= 8; ++w)
      for (int d = 0; d < kNumDtypes; ++d) {
        const bool island = w >= 4 && w % 2 == 0;
        EXPECT_EQ(variantKernel(v, w, d) != nullptr, island) << tpcommVariantName(v) << " " << w;
        EXPECT_EQ(variantOnePassKernel(v, w, d), variantKernel(v, w, d)) << tpcommVariantName(v);
        EXPECT_EQ(variantClusterKernel(v, w, d), nullptr) << tpcommVariantName(v);
      }
}

}  // namespace
}  // namespace tpcomm
