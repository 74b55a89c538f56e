// The quantized wire where a tuning table measured it (src/plan/wire_plan.cc, CommFacts::
// tuned_wire_from; tpcomm tune's wire_from): an opted-in all-reduce below the codec's measured
// crossover keeps full precision and the reason says so; the user's wire_min_bytes still applies;
// a codec not measured behaves as without a table; a forced algorithm runs its codec as forced.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "kernels/runtime/variant_table.h"
#include "plan/knobs.h"
#include "plan/planner.h"
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

constexpr size_t kMiB = 1024 * 1024;

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// 8 PCIe GPUs whose peer stores collapse, opted in to `codec` (the box).
CommFacts box(int codec) {
  CommFacts f = factsFor(8, Fabric::kPcie);
  f.fabric_verdict = FabricVerdict::kWriteCollapse;
  f.knobs.wire = codec;
  return f;
}

int wireOf(const CallPlan& p) {
  const VariantRow* row = variantRow(p.variant);
  return row ? row->wire : -1;
}

TEST(WireTunedPlan, BelowTheMeasuredCrossoverTheCodecIsNotTaken) {
  for (int codec = 1; codec <= 4; ++codec) {
    CommFacts f = box(codec);
    f.tuned_wire_from[codec] = 8 * kMiB;
    const std::string name = wireCodecName(codec);
    for (size_t b : {1 * kMiB, 8 * kMiB - 16, 8 * kMiB, 64 * kMiB}) {
      const CallPlan p = planCall(f, allReduceCall(b, true, tpcommBfloat16));
      const std::string what = name + " " + std::to_string(b) + ": " + p.decision.reason;
      if (b < 8 * kMiB) {
        EXPECT_EQ(wireOf(p), 0) << what;
        CommFacts plain = f;  // what the policy chose: the plan without the opt-in
        plain.knobs.wire = 0;
        EXPECT_EQ(p.variant, planCall(plain, allReduceCall(b, true, tpcommBfloat16)).variant)
            << what;
        EXPECT_TRUE(contains(
            p.decision.reason,
            "; wire=" + name + " not taken (tpcomm tune measured it slower below 8388608 bytes)"))
            << what;
      } else {
        EXPECT_EQ(wireOf(p), codec) << what;
        EXPECT_EQ(p.decision.algo, tpcommAlgoTwoShotPull) << what;
      }
    }
  }
}

TEST(WireTunedPlan, InfMeansNeverAndOtherCodecsAreTheirOwn) {
  CommFacts f = box(2);
  f.tuned_wire_from[2] = SIZE_MAX;  // int4: slower at every size measured
  f.tuned_wire_from[1] = 2 * kMiB;  // int8's crossover does not steer int4
  for (size_t b : {1 * kMiB, 64 * kMiB, size_t{1} << 34}) {
    const CallPlan p = planCall(f, allReduceCall(b, true, tpcommBfloat16));
    EXPECT_EQ(wireOf(p), 0) << p.decision.reason;
    EXPECT_TRUE(contains(p.decision.reason,
                         "wire=int4 not taken (tpcomm tune measured it slower at every size "
                         "measured)"))
        << p.decision.reason;
  }
  // The call's own codec (tpcommAllReduceWire) is held to its own crossover.
  Call c = allReduceCall(4 * kMiB, true, tpcommBfloat16);
  c.wire = 1;
  CallPlan p = planCall(f, c);
  EXPECT_EQ(p.variant, tpcommVariantP2pTwoShotPullInt8) << p.decision.reason;
  c.bytes = 1 * kMiB;
  p = planCall(f, c);
  EXPECT_EQ(wireOf(p), 0) << p.decision.reason;
  EXPECT_TRUE(contains(p.decision.reason,
                       "the call's wire=int8 not taken (tpcomm tune measured it slower below "
                       "2097152 bytes)"))
      << p.decision.reason;
}

// Both must hold: the user's wire_min_bytes above the measured crossover still keeps the codec
// out below it (and says so), the crossover above wire_min_bytes keeps it out below the crossover.
TEST(WireTunedPlan, TheUsersWireMinBytesStillApplies) {
  CommFacts f = box(1);
  f.tuned_wire_from[1] = 2 * kMiB;
  f.knobs.wire_min_bytes = 16 << 20;
  CallPlan p = planCall(f, allReduceCall(8 * kMiB, true, tpcommBfloat16));
  EXPECT_EQ(wireOf(p), 0) << p.decision.reason;
  EXPECT_TRUE(contains(p.decision.reason, "wire=int8 not taken (below wire_min_bytes=16777216)"))
      << p.decision.reason;
  p = planCall(f, allReduceCall(16 * kMiB, true, tpcommBfloat16));
  EXPECT_EQ(p.variant, tpcommVariantP2pTwoShotPullInt8) << p.decision.reason;
  f.knobs.wire_min_bytes = 0;
  p = planCall(f, allReduceCall(1 * kMiB, true, tpcommBfloat16));
  EXPECT_EQ(wireOf(p), 0) << p.decision.reason;
  EXPECT_TRUE(contains(p.decision.reason, "measured it slower below 2097152 bytes"))
      << p.decision.reason;
  p = planCall(f, allReduceCall(2 * kMiB, true, tpcommBfloat16));
  EXPECT_EQ(p.variant, tpcommVariantP2pTwoShotPullInt8) << p.decision.reason;
}

// Not measured (0, every codec, or another codec only): exactly the plan without a table, on
// every fabric form, reason included.
TEST(WireTunedPlan, NotMeasuredIsUnchanged) {
  const struct {
    Fabric fabric;
    bool collapse;
  } boxes[] = {{Fabric::kPcie, true},
               {Fabric::kPcie, false},
               {Fabric::kHost, false},
               {Fabric::kNvlink, false}};
  for (const auto& bx : boxes)
    for (int codec = 1; codec <= 4; ++codec)
      for (size_t b : {64 * size_t{1024}, 1 * kMiB, 32 * kMiB}) {
        CommFacts plain = factsFor(4, bx.fabric);
        if (bx.collapse) plain.fabric_verdict = FabricVerdict::kWriteCollapse;
        plain.knobs.wire = codec;
        CommFacts other = plain;
        for (int k = 1; k <= 4; ++k)
          if (k != codec) other.tuned_wire_from[k] = SIZE_MAX;
        const Call c = allReduceCall(b, true, tpcommBfloat16);
        const CallPlan want = planCall(plain, c), got = planCall(other, c);
        EXPECT_EQ(got.variant, want.variant) << got.decision.reason;
        EXPECT_EQ(got.decision.algo, want.decision.algo);
        EXPECT_EQ(got.decision.reason, want.decision.reason);
        EXPECT_EQ(got.grid.blocks, want.grid.blocks);
        EXPECT_FALSE(contains(got.decision.reason, "tpcomm tune"));
      }
}

// A forced algorithm runs as forced, the table aside (as its rules are): its codec too. That is
// how tpcomm tune measures the codec again on a machine whose table says "inf".
TEST(WireTunedPlan, AForcedAlgorithmIgnoresTheCrossover) {
  CommFacts f = factsFor(4, Fabric::kPcie, tpcommAlgoTwoShotPull);
  f.knobs.wire = 1;
  f.knobs.wire_min_bytes = 0;
  f.tuned_wire_from[1] = SIZE_MAX;
  const CallPlan p = planCall(f, allReduceCall(4 * kMiB, true, tpcommBfloat16));
  EXPECT_EQ(p.variant, tpcommVariantP2pTwoShotPullInt8) << p.decision.reason;
  CommFacts host = factsFor(4, Fabric::kHost, tpcommAlgoHostTwoShot);
  host.knobs.wire = 3;
  host.knobs.wire_min_bytes = 0;
  host.tuned_wire_from[3] = SIZE_MAX;
  EXPECT_EQ(planCall(host, allReduceCall(4 * kMiB, true, tpcommBfloat16)).variant,
            tpcommVariantHostTwoShotFp8);
}

}  // namespace
}  // namespace tpcomm
