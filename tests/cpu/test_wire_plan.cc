// Where the quantized wire runs (src/plan/wire_plan.cc; issue 37): only where asked (the wire
// knob, TPCOMM_WIRE, the call's own codec, or a wire row forced by name), only plain all-reduces
// of wire_min_bytes or more over PCIe peer memory or host memory whose policy chose a
// large-message algorithm (NCCL included), in the form of that fabric (pull, push, host), and over
// NVLink only with a two-shot forced; the reason names the codec and what it replaced, and says
// why where an opted-in call keeps its wire. Never the fused call, reduce-scatter or all-gather.
#include <gtest/gtest.h>

#include <string>

#include "kernels/runtime/variant_table.h"
#include "plan/knobs.h"
#include "plan/planner.h"
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

constexpr size_t kMiB = 1024 * 1024;

bool contains(const std::string& s, const char* what) {
  return s.find(what) != std::string::npos;
}

CommFacts pcie(int world, const char* wire, bool collapse = true) {
  CommFacts f = factsFor(world, Fabric::kPcie);
  if (collapse) f.fabric_verdict = FabricVerdict::kWriteCollapse;
  EXPECT_EQ(parseLaunchKnobs(std::string("wire=") + wire, &f.knobs), "");
  return f;
}

std::string name(const CallPlan& p) {
  return tpcommVariantName(p.variant);
}

TEST(WirePlan, OffUnlessAsked) {
  const LaunchKnobs k;
  EXPECT_EQ(k.wire, 0);
  for (int w : {2, 4, 8})
    for (size_t b : {1 * kMiB, 16 * kMiB, 256 * kMiB}) {
      const CallPlan p =
          planCall(factsFor(w, Fabric::kPcie), allReduceCall(b, true, tpcommBfloat16));
      EXPECT_EQ(variantRow(p.variant)->wire, 0) << name(p);
      EXPECT_FALSE(contains(p.decision.reason, "wire")) << p.decision.reason;
    }
}

// The user's box (8 PCIe GPUs whose peer stores collapse): from 1 MiB the policy sends the
// all-reduce to NCCL at 3+ ranks and to twoshot_pull at 2; opted in, every codec takes both.
TEST(WirePlan, TheCollapsingBoxTakesTheCodecFromWireMinBytes) {
  const struct {
    const char* knob;
    tpcommVariant_t want;
  } codecs[] = {{"int8", tpcommVariantP2pTwoShotPullInt8},
                {"int4", tpcommVariantP2pTwoShotPullInt4},
                {"fp8", tpcommVariantP2pTwoShotPullFp8},
                {"fp8_e4m3", tpcommVariantP2pTwoShotPullFp8},
                {"fp8_e5m2", tpcommVariantP2pTwoShotPullFp8E5m2}};
  for (const auto& c : codecs)
    for (int w = 2; w <= 8; ++w)
      for (size_t b : {64 * size_t{1024}, 1 * kMiB - 16, 1 * kMiB, 29 * kMiB}) {
        const CommFacts f = pcie(w, c.knob);
        const CallPlan p = planCall(f, allReduceCall(b, true, tpcommBfloat16));
        const std::string what = std::string(c.knob) + " world " + std::to_string(w) + " " +
                                 std::to_string(b) + ": " + name(p) + " (" + p.decision.reason +
                                 ")";
        ASSERT_EQ(p.decision.error, tpcommSuccess) << what;
        if (b < 1 * kMiB) {
          EXPECT_EQ(variantRow(p.variant)->wire, 0) << what;
          EXPECT_TRUE(contains(p.decision.reason, "not taken (below wire_min_bytes=1048576)"))
              << what;
          continue;
        }
        EXPECT_EQ(p.variant, c.want) << what;
        EXPECT_EQ(p.decision.algo, tpcommAlgoTwoShotPull) << what;
        EXPECT_FALSE(p.decision.fallback) << what;  // not counted as an NCCL fallback
        EXPECT_TRUE(contains(p.decision.reason, "twoshot_pull over the")) << what;
        EXPECT_TRUE(contains(p.decision.reason, "in place of ")) << what;
        EXPECT_GE(p.grid.blocks, 1) << what;
        EXPECT_EQ(p.threads, p.grid.threads) << what;
      }
}

// wire_min_bytes moves the threshold; the form follows the fabric: pull where peer stores
// collapse, push on a healthy PCIe box, the host form without peer memory; NVLink never by
// itself, a forced two-shot there in its own form, another forced algorithm never; the one-shot
// sizes keep their wire.
TEST(WirePlan, WhereItDoesNotRunTheReasonSaysWhy) {
  CommFacts f = pcie(8, "int8");
  EXPECT_EQ(parseLaunchKnobs("wire_min_bytes=4194304", &f.knobs), "");
  EXPECT_EQ(planCall(f, allReduceCall(2 * kMiB, true, tpcommBfloat16)).variant, tpcommVariantNccl);
  EXPECT_EQ(planCall(f, allReduceCall(4 * kMiB, true, tpcommBfloat16)).variant,
            tpcommVariantP2pTwoShotPullInt8);

  CommFacts nvlink = factsFor(8, Fabric::kNvlink);
  nvlink.knobs.wire = 1;
  CallPlan p = planCall(nvlink, allReduceCall(8 * kMiB, true, tpcommBfloat16));
  EXPECT_EQ(variantRow(p.variant)->wire, 0);
  EXPECT_TRUE(contains(p.decision.reason, "wire=int8 not taken (not over PCIe or host memory)"))
      << p.decision.reason;
  nvlink.forced_algo = tpcommAlgoTwoShotPull;
  EXPECT_EQ(planCall(nvlink, allReduceCall(8 * kMiB, true, tpcommBfloat16)).variant,
            tpcommVariantP2pTwoShotPullInt8);
  nvlink.forced_algo = tpcommAlgoTwoShot;
  EXPECT_EQ(planCall(nvlink, allReduceCall(8 * kMiB, true, tpcommBfloat16)).variant,
            tpcommVariantP2pTwoShotInt8);
  nvlink.forced_algo = tpcommAlgoIsland;
  p = planCall(nvlink, allReduceCall(8 * kMiB, true, tpcommBfloat16));
  EXPECT_EQ(p.variant, tpcommVariantIsland);
  EXPECT_TRUE(contains(p.decision.reason, "the forced algorithm has no codec"))
      << p.decision.reason;

  // TPCOMM_STRICT=1 refuses the NCCL fallback; the codec serves the call instead.
  CommFacts strict = pcie(8, "int8");
  strict.strict = true;
  p = planCall(strict, allReduceCall(8 * kMiB, true, tpcommBfloat16));
  EXPECT_EQ(p.decision.error, tpcommSuccess) << p.decision.reason;
  EXPECT_EQ(p.variant, tpcommVariantP2pTwoShotPullInt8) << p.decision.reason;
  EXPECT_TRUE(contains(p.decision.reason, "in place of nccl")) << p.decision.reason;
  strict.knobs.wire = 0;
  EXPECT_EQ(planCall(strict, allReduceCall(8 * kMiB, true, tpcommBfloat16)).decision.error,
            tpcommFallbackRefused);

  CommFacts small = pcie(2, "int4", false);
  small.knobs.wire_min_bytes = 0;
  p = planCall(small, allReduceCall(16 * 1024, true, tpcommBfloat16));
  EXPECT_EQ(variantRow(p.variant)->wire, 0) << name(p);
  EXPECT_TRUE(contains(p.decision.reason, "a one-shot's size")) << p.decision.reason;
}

// The form of every codec on each fabric, at every world, from wire_min_bytes: the algorithm the
// call reports is the form's, its grid fits the host flags (one per block), and nothing is counted
// as an NCCL fallback.
TEST(WirePlan, TheFormFollowsTheFabric) {
  const struct {
    const char* what;
    Fabric fabric;
    bool collapse;
    int algo;
    tpcommVariant_t int8;  // the INT8 row; the other codecs follow it
  } forms[] = {
      {"collapsing PCIe", Fabric::kPcie, true, tpcommAlgoTwoShotPull,
       tpcommVariantP2pTwoShotPullInt8},
      {"healthy PCIe", Fabric::kPcie, false, tpcommAlgoTwoShot, tpcommVariantP2pTwoShotInt8},
      {"host memory", Fabric::kHost, false, tpcommAlgoHostTwoShot, tpcommVariantHostTwoShotInt8},
  };
  for (const auto& form : forms)
    for (int codec = 1; codec <= 4; ++codec)
      for (int w = 2; w <= 8; ++w)
        for (size_t b : {1 * kMiB, 29 * kMiB, 256 * kMiB}) {
          CommFacts f = factsFor(w, form.fabric);
          if (form.collapse) f.fabric_verdict = FabricVerdict::kWriteCollapse;
          f.knobs.wire = codec;
          if (form.fabric == Fabric::kHost) {
            // The host form's step: a host_bulk outbox slot of world + 1 areas (SlotCapacity).
            EXPECT_GT(f.slots.host_pull_chunk_vecs, 0u);
            EXPECT_EQ(f.slots.host_pull_chunk_vecs,
                      f.slots.bulk_step_bytes / kVecBytes / (w + 1) * static_cast<size_t>(w));
          }
          const CallPlan p = planCall(f, allReduceCall(b, true, tpcommBfloat16));
          const std::string what = std::string(form.what) + " codec " + std::to_string(codec) +
                                   " world " + std::to_string(w) + " " + std::to_string(b) + ": " +
                                   name(p) + " (" + p.decision.reason + ")";
          ASSERT_EQ(p.decision.error, tpcommSuccess) << what;
          EXPECT_EQ(p.variant, form.int8 + codec - 1) << what;
          EXPECT_EQ(variantRow(p.variant)->wire, codec) << what;
          EXPECT_EQ(p.decision.algo, form.algo) << what;
          EXPECT_FALSE(p.decision.fallback) << what;
          EXPECT_TRUE(contains(p.decision.reason,
                               (std::string(tpcommAlgoName(form.algo)) + " over the").c_str()))
              << what;
          EXPECT_GE(p.grid.blocks, 1) << what;
          EXPECT_LE(p.grid.blocks, kBulkFlagBlocks) << what;
        }
}

// tpcommAllReduceWire: the call's own codec replaces the communicator's for that call (0: none,
// on a communicator opted in), under the same rules; a plan of another codec is another plan.
TEST(WirePlan, TheCallsOwnCodec) {
  Call c = allReduceCall(8 * kMiB, true, tpcommBfloat16);
  CommFacts f = factsFor(8, Fabric::kPcie);  // not opted in
  c.wire = 2;
  CallPlan p = planCall(f, c);
  EXPECT_EQ(p.variant, tpcommVariantP2pTwoShotInt4) << p.decision.reason;
  EXPECT_TRUE(contains(p.decision.reason, "the call's wire=int4")) << p.decision.reason;
  f.knobs.wire = 1;
  c.wire = 0;
  p = planCall(f, c);
  EXPECT_EQ(variantRow(p.variant)->wire, 0) << name(p);
  c.wire = -1;
  EXPECT_EQ(planCall(f, c).variant, tpcommVariantP2pTwoShotInt8);
  c.wire = 3;
  c.bytes = 64 * 1024;  // wire_min_bytes still holds
  p = planCall(f, c);
  EXPECT_EQ(variantRow(p.variant)->wire, 0) << name(p);
  EXPECT_TRUE(contains(p.decision.reason, "the call's wire=fp8 not taken (below wire_min_bytes"))
      << p.decision.reason;
  Call other = c;
  other.wire = 1;
  EXPECT_FALSE(other == c);  // the plan cache keeps them apart
}

// The fused call, reduce-scatter and all-gather keep their full-precision wire under the opt-in.
TEST(WirePlan, OnlyThePlainAllReduce) {
  const CommFacts f = pcie(2, "int8");
  const CallPlan fused = planCall(f, fusedCall(2048, 7168, tpcommBfloat16, false));
  EXPECT_EQ(variantRow(fused.variant)->wire, 0) << name(fused);
  EXPECT_EQ(variantRow(fused.epilogue.variant)->wire, 0);
  for (tpcommColl_t coll : {tpcommCollReduceScatter, tpcommCollAllGather}) {
    Call c = allReduceCall(32 * kMiB, true, tpcommBfloat16);
    c.collective = coll;
    EXPECT_EQ(variantRow(planCall(f, c).variant)->wire, 0);
  }
}

// A wire row forced by name opts in by itself, at any size over peer memory.
TEST(WirePlan, ForcedByNameItOptsIn) {
  for (Fabric fabric : {Fabric::kNvlink, Fabric::kPcie}) {
    CommFacts f = factsFor(4, fabric);
    EXPECT_EQ(parseLaunchKnobs("variant=p2p_twoshot_pull_fp8_e5m2", &f.knobs), "");
    const CallPlan p = planCall(f, allReduceCall(64 * 1024, true, tpcommFloat32));
    EXPECT_EQ(p.decision.error, tpcommSuccess) << p.decision.reason;
    EXPECT_EQ(p.variant, tpcommVariantP2pTwoShotPullFp8E5m2) << p.decision.reason;
    EXPECT_EQ(p.decision.reason.rfind("variant=p2p_twoshot_pull_fp8_e5m2 (forced)", 0), 0u);
  }
  CommFacts host = factsFor(4, Fabric::kHost);
  host.knobs.variant = tpcommVariantP2pTwoShotPullInt8;
  EXPECT_EQ(planCall(host, allReduceCall(64 * 1024, true, tpcommBfloat16)).decision.error,
            tpcommUnsupported);
  host.knobs.variant = tpcommVariantHostTwoShotFp8;
  CallPlan p = planCall(host, allReduceCall(64 * 1024, true, tpcommBfloat16));
  EXPECT_EQ(p.variant, tpcommVariantHostTwoShotFp8) << p.decision.reason;
  EXPECT_EQ(p.decision.algo, tpcommAlgoHostTwoShot);
  CommFacts nvlink = factsFor(2, Fabric::kNvlink);
  nvlink.knobs.variant = tpcommVariantP2pTwoShotInt4;
  p = planCall(nvlink, allReduceCall(4096, true, tpcommFloat16));
  EXPECT_EQ(p.variant, tpcommVariantP2pTwoShotInt4) << p.decision.reason;
  EXPECT_EQ(p.decision.algo, tpcommAlgoTwoShot);
  nvlink.knobs.variant = tpcommVariantHostTwoShotInt8;  // no host transport there
  EXPECT_EQ(planCall(nvlink, allReduceCall(4096, true, tpcommFloat16)).decision.error,
            tpcommUnsupported);
}

// The knob's names, its text for the ranks' agreement, and what it refuses.
TEST(WirePlan, TheKnob) {
  LaunchKnobs k;
  EXPECT_EQ(parseLaunchKnobs("wire=fp8_e5m2,wire_min_bytes=65536", &k), "");
  EXPECT_EQ(k.wire, 4);
  EXPECT_EQ(k.wire_min_bytes, 65536);
  EXPECT_EQ(planKnobsText(k), "wire_min_bytes=65536,wire=fp8_e5m2");
  EXPECT_EQ(launchKnobsError(k, 512), "");
  const std::string bad = parseLaunchKnobs("wire=int3", &k);
  EXPECT_TRUE(contains(bad, "wire=int3: not a codec (known: none, int8, int4, fp8, fp8_e5m2"))
      << bad;
  k.wire = 9;
  EXPECT_TRUE(contains(launchKnobsError(k, 512), "wire=9 is out of range"))
      << launchKnobsError(k, 512);
  EXPECT_STREQ(wireCodecName(0), "none");
  EXPECT_EQ(wireCodecName(5), nullptr);
}

// Two real islands over PCIe: the policy's island (island_pull where stores collapse) is a
// large-message algorithm, and an opted-in call takes the flat two-shot in the codec in its place.
TEST(WirePlan, AnIslandCallTakesTheTwoShotInTheCodec) {
  for (bool collapse : {false, true}) {
    CommFacts f = pcie(8, "int8", collapse);
    f.two_islands = true;
    const CallPlan p = planCall(f, allReduceCall(8 * kMiB, true, tpcommBfloat16));
    ASSERT_EQ(p.decision.error, tpcommSuccess) << p.decision.reason;
    EXPECT_EQ(p.variant, collapse ? tpcommVariantP2pTwoShotPullInt8 : tpcommVariantP2pTwoShotInt8)
        << name(p) << " (" << p.decision.reason << ")";
    EXPECT_EQ(p.decision.algo, collapse ? tpcommAlgoTwoShotPull : tpcommAlgoTwoShot);
    EXPECT_TRUE(
        contains(p.decision.reason, collapse ? "in place of island_pull" : "in place of island:"))
        << p.decision.reason;
  }
}

}  // namespace
}  // namespace tpcomm
