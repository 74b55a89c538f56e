// The plan of a collective across machines (plan/node_plan.h) and the text Explain shows: the
// small variant by size, only with two machines (bit-identical results), forced either way by the
// knob; reduce-scatter and all-gather only over consecutive ranks per machine.
#include <gtest/gtest.h>

#include <string>

#include "plan/fused_plan.h"
#include "plan/knobs.h"
#include "plan/node_plan.h"
#include "plan/planner.h"
#include "support/plan_facts.h"

namespace tpcomm {
namespace {

NodePlanArgs ar(size_t bytes, int nodes = 2, int local = 2) {
  NodePlanArgs a;
  a.bytes = bytes;
  a.nodes = nodes;
  a.local_ranks = local;
  return a;
}

TEST(NodePlan, SmallBySizeWithTwoMachinesLargeAbove) {
  EXPECT_EQ(nodeShape(ar(65536)).shape, NodeShape::kSmall);
  EXPECT_EQ(nodeShape(ar(65537)).shape, NodeShape::kLarge);
  EXPECT_EQ(nodeShape(ar(65537)).why, "large: 65537 B > node_small_bytes 65536");
  EXPECT_EQ(nodeShape(ar(1024)).why, "small: 1024 B <= node_small_bytes 65536");
}

TEST(NodePlan, SmallNeedsTwoMachinesEvenWhenForced) {
  NodePlanArgs a = ar(1024, 3);
  EXPECT_EQ(nodeShape(a).shape, NodeShape::kLarge);
  EXPECT_EQ(nodeShape(a).why, "large: small needs 2 nodes, not 3");
  a.small_bytes = 1 << 30;  // small for every call, where allowed
  EXPECT_EQ(nodeShape(a).shape, NodeShape::kLarge);
}

// node_small_bytes alone forces either shape: 0 none small, its most every call up to 1 GiB.
TEST(NodePlan, TheKnobForcesEitherVariant) {
  NodePlanArgs a = ar(1 << 20);
  a.small_bytes = 1 << 30;
  EXPECT_EQ(nodeShape(a).shape, NodeShape::kSmall);
  EXPECT_EQ(nodeShape(a).why, "small: 1048576 B <= node_small_bytes 1073741824");
  a = ar(16);
  a.small_bytes = 0;
  EXPECT_EQ(nodeShape(a).shape, NodeShape::kLarge);
  EXPECT_EQ(nodeShape(a).why, "large: 16 B > node_small_bytes 0");
  a = ar(16);
  a.small_bytes = 8;
  EXPECT_EQ(nodeShape(a).shape, NodeShape::kLarge);
}

TEST(NodePlan, TheKnobsParseAndAreRangeChecked) {
  LaunchKnobs k;
  EXPECT_EQ(parseLaunchKnobs("node_small_bytes=4096", &k), "");
  EXPECT_EQ(k.node_small_bytes, 4096);
  EXPECT_EQ(launchKnobsError(k, 512), "");
  EXPECT_EQ(parseLaunchKnobs("node_small_bytes=0", &k), "");
  EXPECT_NE(parseLaunchKnobs("node_small_bytes=-1", &k), "");
  // The knob it replaced says what to use instead.
  const std::string gone = parseLaunchKnobs("node_variant=2", &k);
  EXPECT_NE(gone.find("node_variant is gone: node_small_bytes says it alone"), std::string::npos)
      << gone;
}

TEST(NodePlan, HalvesNeedConsecutiveRanksPerMachine) {
  NodePlanArgs a = ar(4096);
  a.coll = tpcommCollReduceScatter;
  EXPECT_EQ(nodeShape(a).error, tpcommSuccess);
  EXPECT_EQ(nodeShape(a).shape, NodeShape::kRsag);
  a.contiguous = false;
  const NodePlan p = nodeShape(a);
  EXPECT_EQ(p.error, tpcommUnsupported);
  EXPECT_NE(p.why.find("consecutive global ranks"), std::string::npos) << p.why;
}

TEST(NodePlan, TheTextNamesEveryLeg) {
  NodePlanArgs a = ar(1 << 20);
  EXPECT_EQ(nodeLegsText(a, nodeShape(a), tpcommVariantP2pReduceScatter, tpcommVariantP2pAllGather),
            "hierarchical (large: 1048576 B > node_small_bytes 65536): p2p_reduce_scatter -> "
            "nccl all_reduce over 2 nodes -> p2p_all_gather");
  a = ar(4096);
  EXPECT_EQ(nodeLegsText(a, nodeShape(a), tpcommVariantP2pOneShotLean, 0),
            "hierarchical (small: 4096 B <= node_small_bytes 65536): p2p_oneshot_lean -> nccl "
            "all_reduce over 2 nodes");
  a = ar(4096, 4, 1);  // one rank a machine: NCCL is the only leg
  EXPECT_EQ(nodeLegsText(a, nodeShape(a), 0, 0),
            "hierarchical (large: small needs 2 nodes, not 4): nccl all_reduce over 4 nodes");
  a = ar(8192);
  a.coll = tpcommCollReduceScatter;
  EXPECT_EQ(nodeLegsText(a, nodeShape(a), tpcommVariantHostReduceScatter, 0),
            "hierarchical: host_reduce_scatter per node -> nccl reduce_scatter over 2 nodes");
  a.coll = tpcommCollAllGather;
  EXPECT_EQ(nodeLegsText(a, nodeShape(a), tpcommVariantP2pAllGather, tpcommVariantP2pAllGather),
            "hierarchical: nccl all_gather over 2 nodes -> p2p_all_gather per node");
  // Every text fits tpcommCallInfo_t::reason (160 bytes with the NUL).
  a = ar(~size_t{0}, 2, 8);
  a.small_bytes = 1 << 30;
  EXPECT_LT(
      nodeLegsText(a, nodeShape(a), tpcommVariantHostReduceScatter, tpcommVariantHostAllGather)
          .size(),
      160u);
}

// The planner itself on a spanning communicator (CommFacts::nodes > 1): the legs' shape and text,
// and the first intra-node leg's plan as the single-machine planner gives it for the leg's bytes.
CommFacts spanning(int local, int nodes = 2) {
  CommFacts f = factsFor(local, Fabric::kNvlink);
  f.nodes = nodes;
  return f;
}

Call call(tpcommColl_t coll, size_t bytes, tpcommDataType_t dt = tpcommBfloat16) {
  Call c{bytes, true, coll};
  c.dtype = dt;
  return c;
}

TEST(NodePlan, ThePlannerPlansTheLegsOverThisMachine) {
  const CommFacts local = factsFor(2, Fabric::kNvlink);
  // Large: 1001 bf16 elements do not split over 2 ranks; the reduce-scatter leg runs the padded
  // 1002 (plan/node_plan.cc legBytes, as node_collectives.cc pads them).
  CallPlan p = planCall(spanning(2), call(tpcommCollAllReduce, (64 * 1024 + 1001) * 2));
  ASSERT_EQ(p.decision.error, tpcommSuccess) << p.decision.reason;
  EXPECT_EQ(p.node.shape, NodeShape::kLarge);
  const CallPlan rs = planCall(local, Call{(64 * 1024 + 1002) * 2, true, tpcommCollReduceScatter});
  EXPECT_EQ(p.variant, rs.variant);
  EXPECT_EQ(p.grid.blocks, rs.grid.blocks);
  EXPECT_EQ(p.node.text,
            nodeLegsText(ar((64 * 1024 + 1001) * 2), nodeShape(ar((64 * 1024 + 1001) * 2)),
                         rs.variant, tpcommVariantP2pAllGather));
  // Small: the all-reduce of the whole message on this machine first.
  p = planCall(spanning(2), call(tpcommCollAllReduce, 4096));
  EXPECT_EQ(p.node.shape, NodeShape::kSmall);
  EXPECT_EQ(p.variant, planCall(local, Call{4096, true}).variant);
  EXPECT_NE(p.node.text.find(tpcommVariantName(p.variant)), std::string::npos) << p.node.text;
  // One rank a machine: NCCL is the only leg, and what the call records.
  p = planCall(spanning(1, 4), call(tpcommCollAllReduce, 4096));
  EXPECT_EQ(p.variant, tpcommVariantNccl);
  EXPECT_EQ(p.decision.algo, tpcommAlgoNccl);
  EXPECT_EQ(p.node.text,
            "hierarchical (large: small needs 2 nodes, not 4): nccl all_reduce over 4 nodes");
}

TEST(NodePlan, ThePlannerGivesAHalfItsMachinesSegments) {
  // A reduce-scatter of 1024 fp32 elements per rank over 2 x 4 ranks: bytes is the global world's
  // message; each machine's leg moves 4 ranks' runs.
  const CallPlan p =
      planCall(spanning(4), call(tpcommCollReduceScatter, 8 * 1024 * 4, tpcommFloat32));
  ASSERT_EQ(p.decision.error, tpcommSuccess) << p.decision.reason;
  EXPECT_EQ(p.node.shape, NodeShape::kRsag);
  const CallPlan leg =
      planCall(factsFor(4, Fabric::kNvlink), Call{4 * 1024 * 4, true, tpcommCollReduceScatter});
  EXPECT_EQ(p.variant, leg.variant);
  EXPECT_EQ(p.grid.blocks, leg.grid.blocks);
  EXPECT_EQ(p.node.text, "hierarchical: " + std::string(tpcommVariantName(leg.variant)) +
                             " per node -> nccl reduce_scatter over 2 nodes");
  // Ranks of a machine that are not consecutive: refused, with the reason, by the planner.
  CommFacts f = spanning(4);
  f.node_contiguous = false;
  const CallPlan q = planCall(f, call(tpcommCollAllGather, 8 * 1024 * 4, tpcommFloat32));
  EXPECT_EQ(q.decision.error, tpcommUnsupported);
  EXPECT_EQ(q.node.error, tpcommUnsupported);
  EXPECT_NE(q.node.text.find("consecutive global ranks"), std::string::npos) << q.node.text;
}

// A fused call across machines is never fused (its kernels would sum one machine only): the
// hierarchical all-reduce's plan, then the epilogue kernel with its planned grid.
TEST(NodePlan, AFusedCallAcrossMachinesRunsTheEpilogueKernel) {
  for (bool fp8 : {false, true}) {
    const Call fused = fusedCall(4, 7168, tpcommBfloat16, fp8);
    ASSERT_TRUE(
        isFusedVariant(planCall(factsFor(2, Fabric::kNvlink), fused).epilogue.variant));  // one
    const CallPlan p = planCall(spanning(2), fused);
    ASSERT_EQ(p.decision.error, tpcommSuccess) << p.decision.reason;
    EXPECT_EQ(p.epilogue.variant, epilogueVariant(fp8));
    EXPECT_EQ(p.epilogue.reason, "across machines: the hierarchical all-reduce, then add_rmsnorm");
    EXPECT_GT(p.epilogue.blocks, 0);
    EXPECT_GT(p.epilogue.threads, 0);
    Call ar = call(tpcommCollAllReduce, fused.bytes);
    EXPECT_EQ(p.node.text, planCall(spanning(2), ar).node.text);
    EXPECT_EQ(p.variant, planCall(spanning(2), ar).variant);
  }
}

// The large shape's legs run the count padded to whole runs of the local ranks (as
// node_collectives.cc pads them), never cut to them: 65537 bf16 elements over 2 ranks run as
// 65538, whose reduce-scatter takes 33 blocks of 2 KiB shares (65536 would take 32).
TEST(NodePlan, TheLargeShapesLegsRunThePaddedCount) {
  const CallPlan p = planCall(spanning(2), call(tpcommCollAllReduce, 65537 * 2));
  ASSERT_EQ(p.decision.error, tpcommSuccess) << p.decision.reason;
  ASSERT_EQ(p.node.shape, NodeShape::kLarge);
  const CallPlan padded =
      planCall(factsFor(2, Fabric::kNvlink), Call{65538 * 2, true, tpcommCollReduceScatter});
  EXPECT_EQ(padded.grid.blocks, 33);
  EXPECT_EQ(p.grid.blocks, 33);
  EXPECT_EQ(p.variant, padded.variant);
}

// node_small_bytes=0 takes the large shape for every all-reduce across machines, an empty one
// (Explain of count 0) included.
TEST(NodePlan, KnobZeroIsLargeEvenForAnEmptyCall) {
  NodePlanArgs a = ar(0);
  a.small_bytes = 0;
  EXPECT_EQ(nodeShape(a).shape, NodeShape::kLarge);
  EXPECT_EQ(nodeShape(a).why, "large: 0 B > node_small_bytes 0");
}

// The small shape's leg is the all-reduce of the whole message on this machine: 64 KiB at two
// ranks takes the one-shot's 32 blocks of 2 KiB.
TEST(NodePlan, TheSmallShapesLegIsTheWholeMessage) {
  const CallPlan p = planCall(spanning(2), call(tpcommCollAllReduce, 64 * 1024));
  ASSERT_EQ(p.node.shape, NodeShape::kSmall);
  EXPECT_EQ(p.grid.blocks, 32);
  EXPECT_EQ(p.grid.blocks,
            planCall(factsFor(2, Fabric::kNvlink), Call{64 * 1024, true}).grid.blocks);
}

}  // namespace
}  // namespace tpcomm
