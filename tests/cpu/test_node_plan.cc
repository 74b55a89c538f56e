// The plan of a collective across machines (plan/node_plan.h) and the text Explain shows: the
// small variant by size, only with two machines (bit-identical results), forced either way by the
// knob; reduce-scatter and all-gather only over consecutive ranks per machine.
#include <gtest/gtest.h>

#include <string>

#include "plan/knobs.h"
#include "plan/node_plan.h"

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
  EXPECT_EQ(planNodeCall(ar(65536)).shape, NodeShape::kSmall);
  EXPECT_EQ(planNodeCall(ar(65537)).shape, NodeShape::kLarge);
  EXPECT_EQ(planNodeCall(ar(65537)).why, "large: 65537 B > node_small_bytes 65536");
  EXPECT_EQ(planNodeCall(ar(1024)).why, "small: 1024 B <= node_small_bytes 65536");
}

TEST(NodePlan, SmallNeedsTwoMachinesEvenWhenForced) {
  NodePlanArgs a = ar(1024, 3);
  EXPECT_EQ(planNodeCall(a).shape, NodeShape::kLarge);
  EXPECT_EQ(planNodeCall(a).why, "large: small needs 2 nodes, not 3");
  a.forced = 1;
  EXPECT_EQ(planNodeCall(a).shape, NodeShape::kLarge);
}

TEST(NodePlan, TheKnobForcesEitherVariant) {
  NodePlanArgs a = ar(1 << 20);
  a.forced = 1;
  EXPECT_EQ(planNodeCall(a).shape, NodeShape::kSmall);
  EXPECT_EQ(planNodeCall(a).why, "small: forced");
  a = ar(16);
  a.forced = 2;
  EXPECT_EQ(planNodeCall(a).shape, NodeShape::kLarge);
  a = ar(16);
  a.small_bytes = 8;
  EXPECT_EQ(planNodeCall(a).shape, NodeShape::kLarge);
}

TEST(NodePlan, TheKnobsParseAndAreRangeChecked) {
  LaunchKnobs k;
  EXPECT_EQ(parseLaunchKnobs("node_small_bytes=4096,node_variant=2", &k), "");
  EXPECT_EQ(k.node_small_bytes, 4096);
  EXPECT_EQ(k.node_variant, 2);
  EXPECT_EQ(launchKnobsError(k, 512), "");
  k.node_variant = 3;
  EXPECT_NE(launchKnobsError(k, 512).find("node_variant=3 is out of range"), std::string::npos);
}

TEST(NodePlan, HalvesNeedConsecutiveRanksPerMachine) {
  NodePlanArgs a = ar(4096);
  a.coll = tpcommCollReduceScatter;
  EXPECT_EQ(planNodeCall(a).error, tpcommSuccess);
  EXPECT_EQ(planNodeCall(a).shape, NodeShape::kHalf);
  a.contiguous = false;
  const NodePlan p = planNodeCall(a);
  EXPECT_EQ(p.error, tpcommUnsupported);
  EXPECT_NE(p.why.find("consecutive global ranks"), std::string::npos) << p.why;
}

TEST(NodePlan, TheTextNamesEveryLeg) {
  NodePlanArgs a = ar(1 << 20);
  EXPECT_EQ(
      nodeLegsText(a, planNodeCall(a), tpcommVariantP2pReduceScatter, tpcommVariantP2pAllGather),
      "hierarchical (large: 1048576 B > node_small_bytes 65536): p2p_reduce_scatter -> "
      "nccl all_reduce over 2 nodes -> p2p_all_gather");
  a = ar(4096);
  EXPECT_EQ(nodeLegsText(a, planNodeCall(a), tpcommVariantP2pOneShotLean, 0),
            "hierarchical (small: 4096 B <= node_small_bytes 65536): p2p_oneshot_lean -> nccl "
            "all_reduce over 2 nodes");
  a = ar(4096, 4, 1);  // one rank a machine: NCCL is the only leg
  EXPECT_EQ(nodeLegsText(a, planNodeCall(a), 0, 0),
            "hierarchical (large: small needs 2 nodes, not 4): nccl all_reduce over 4 nodes");
  a = ar(8192);
  a.coll = tpcommCollReduceScatter;
  EXPECT_EQ(nodeLegsText(a, planNodeCall(a), tpcommVariantHostReduceScatter, 0),
            "hierarchical: host_reduce_scatter per node -> nccl reduce_scatter over 2 nodes");
  a.coll = tpcommCollAllGather;
  EXPECT_EQ(nodeLegsText(a, planNodeCall(a), tpcommVariantP2pAllGather, tpcommVariantP2pAllGather),
            "hierarchical: nccl all_gather over 2 nodes -> p2p_all_gather per node");
  // Every text fits tpcommCallInfo_t::reason (160 bytes with the NUL).
  a = ar(~size_t{0}, 2, 8);
  a.small_bytes = 1 << 30;
  EXPECT_LT(
      nodeLegsText(a, planNodeCall(a), tpcommVariantHostReduceScatter, tpcommVariantHostAllGather)
          .size(),
      160u);
}

}  // namespace
}  // namespace tpcomm
