// The host two-shot's pulled form in the planner (src/plan/planner.cc, hostPullForm): host_twoshot
// calls above the knob host_ll_bytes run the table's full-precision pulled host row
// (host_twoshot_pull: twoshot_pull.cu over the bulk outboxes) with the outboxes' step and the pull
// two-shot's grid; up to it, the LL entries (host_twoshot_ll) as before. The planner finds the row
// by what it is (allReduceRow), so forcing it by name, the knob and the wire's forms all agree.
#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "plan/grid.h"
#include "plan/planner.h"
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

std::string at(int world, size_t bytes, const CallPlan& p) {
  return "world " + std::to_string(world) + ", " + std::to_string(bytes) +
         " bytes: " + tpcommVariantName(p.variant) + " (" + p.decision.reason + ")";
}

TEST(HostPullPlan, TheTableHoldsOneRowOfEachDescription) {
  EXPECT_EQ(allReduceRow(VariantTransport::kHost, true, 0), tpcommVariantHostTwoShotPull);
  EXPECT_EQ(allReduceRow(VariantTransport::kHost, true, 1), tpcommVariantHostTwoShotInt8);
  EXPECT_EQ(allReduceRow(VariantTransport::kPeer, true, 2), tpcommVariantP2pTwoShotPullInt4);
  EXPECT_EQ(allReduceRow(VariantTransport::kPeer, false, 3), tpcommVariantP2pTwoShotFp8);
  // Several rows share a description (the one-shots and two-shots over peer memory; the host LL,
  // sentinel and bulk rows): it names none of them.
  EXPECT_EQ(allReduceRow(VariantTransport::kPeer, false, 0), kNoVariant);
  EXPECT_EQ(allReduceRow(VariantTransport::kHost, false, 0), kNoVariant);
  EXPECT_EQ(allReduceRow(VariantTransport::kCopyEngine, true, 0), kNoVariant);
  EXPECT_STREQ(tpcommVariantName(tpcommVariantHostTwoShotPull), "host_twoshot_pull");
}

TEST(HostPullPlan, AboveTheKnobTheHostTwoShotPulls) {
  for (int world = 2; world <= 8; ++world) {
    const CommFacts f = factsFor(world, Fabric::kHost, tpcommAlgoHostTwoShot);
    const size_t ll = static_cast<size_t>(f.knobs.host_ll_bytes);
    ASSERT_EQ(ll, 256 * KiB);
    for (size_t bytes : {size_t{16}, 64 * KiB, ll, ll + 16, 1 * MiB, 64 * MiB + 2}) {
      const CallPlan p = planCall(f, Call{bytes, bytes % 16 == 0});
      ASSERT_EQ(p.decision.error, tpcommSuccess) << at(world, bytes, p);
      EXPECT_EQ(p.decision.algo, tpcommAlgoHostTwoShot) << at(world, bytes, p);
      if (bytes <= ll) {
        EXPECT_EQ(p.variant, tpcommVariantHostTwoShotLL) << at(world, bytes, p);
        EXPECT_EQ(p.chunk_vecs, f.slots.host_chunk_vecs) << at(world, bytes, p);
        continue;
      }
      EXPECT_EQ(p.variant, tpcommVariantHostTwoShotPull) << at(world, bytes, p);
      EXPECT_NE(p.decision.reason.find("above host_ll_bytes=262144"), std::string::npos)
          << p.decision.reason;
      // The outboxes' step, which holds world + 1 areas of a segment each (twoshot_pull.cu).
      EXPECT_EQ(p.chunk_vecs, f.slots.host_pull_chunk_vecs);
      EXPECT_GT(p.chunk_vecs, 0u);
      const size_t out_slot = bulkSlotBytes(4 * MiB);
      EXPECT_LE(p.chunk_vecs / world * (world + 1) * kVecBytes, out_slot) << at(world, bytes, p);
      // The pull two-shot's grid, launched as planned.
      const GridPlan g = planGrid(tpcommAlgoTwoShotPull, bytes, p.chunk_vecs * kVecBytes, world,
                                  f.knobs, residentCap(f));
      EXPECT_EQ(p.grid.blocks, g.blocks);
      EXPECT_EQ(p.grid.threads, g.threads);
      EXPECT_EQ(p.threads, g.threads);
      EXPECT_EQ(p.aligned, bytes % 16 == 0);
    }
  }
}

TEST(HostPullPlan, TheKnobMovesTheCrossover) {
  CommFacts f = factsFor(4, Fabric::kHost, tpcommAlgoHostTwoShot);
  f.knobs.host_ll_bytes = 0;  // the pulled form at every size
  EXPECT_EQ(planCall(f, Call{16, true}).variant, tpcommVariantHostTwoShotPull);
  f.knobs.host_ll_bytes = INT_MAX;  // LL at every size
  EXPECT_EQ(planCall(f, Call{64 * MiB, true}).variant, tpcommVariantHostTwoShotLL);
  LaunchKnobs k;
  EXPECT_EQ(parseLaunchKnobs("host_ll_bytes=4096", &k), "");
  EXPECT_EQ(k.host_ll_bytes, 4096);
  EXPECT_NE(parseLaunchKnobs("host_ll_bytes=-1", &k), "");
}

TEST(HostPullPlan, AutoTakesItFromThreeRanksAndNoOtherAlgorithmDoes) {
  // Auto over host memory (plan/policy.cc's host tables): the host two-shot from three ranks
  // where bulk ran, so its pulled form above host_ll_bytes; at two ranks bulk still.
  for (int world : {3, 4, 8}) {
    const CallPlan p = planCall(factsFor(world, Fabric::kHost), Call{1 * MiB, true});
    EXPECT_EQ(p.variant, tpcommVariantHostTwoShotPull) << at(world, 1 * MiB, p);
  }
  const CallPlan two = planCall(factsFor(2, Fabric::kHost), Call{1 * MiB, true});
  EXPECT_EQ(two.variant, tpcommVariantHostBulk) << at(2, 1 * MiB, two);
  // host_bulk and the host one-shot keep their kernels at every size.
  for (int algo : {tpcommAlgoHostOneShot, tpcommAlgoHostBulk})
    for (size_t bytes : {1 * MiB, 64 * MiB}) {
      const CallPlan p = planCall(factsFor(4, Fabric::kHost, algo), Call{bytes, true});
      EXPECT_NE(p.variant, tpcommVariantHostTwoShotPull) << at(4, bytes, p);
    }
}

TEST(HostPullPlan, EachFormForcedByNameRunsOnEitherSideOfTheKnob) {
  // A forced row runs where some option of the knobs gives it (forced_variant.cc): the pulled
  // form below the knob, the LL form above it.
  for (int world : {2, 5, 8}) {
    const CommFacts host = factsFor(world, Fabric::kHost);
    for (tpcommVariant_t v : {tpcommVariantHostTwoShotPull, tpcommVariantHostTwoShotLL})
      for (size_t bytes : {size_t{4096}, 16 * MiB}) {
        CommFacts f = host;
        f.knobs.variant = v;
        const CallPlan p = planCall(f, Call{bytes, true});
        EXPECT_EQ(p.variant, v) << at(world, bytes, p);
        EXPECT_NE(p.decision.reason.find("(forced)"), std::string::npos) << p.decision.reason;
      }
  }
}

// Outboxes that hold no step of the pulled form (host_pull_chunk_vecs 0): the LL entries serve
// every size, never a pull of zero-vector steps.
TEST(HostPullPlan, OutboxesWithoutAStepKeepTheLLEntries) {
  CommFacts f = factsFor(8, Fabric::kHost, tpcommAlgoHostTwoShot);
  f.slots.host_pull_chunk_vecs = 0;
  const CallPlan p = planCall(f, Call{1 * MiB, true});
  ASSERT_EQ(p.decision.error, tpcommSuccess) << at(8, 1 * MiB, p);
  EXPECT_EQ(p.variant, tpcommVariantHostTwoShotLL) << at(8, 1 * MiB, p);
  EXPECT_EQ(p.chunk_vecs, f.slots.host_chunk_vecs);
}

}  // namespace
}  // namespace tpcomm
