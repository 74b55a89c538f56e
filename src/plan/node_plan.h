// The plan of a collective on a communicator that spans machines: which shape of legs runs it
// (intra-node tpcomm legs, inter-node NCCL legs) and the text tpcommCommExplain and the last-call
// info show. The intra-node legs are planned by the single-machine planner over the local group.
// Pure C++: the CPU tests check every decision and text.
#pragma once

#include <cstddef>
#include <string>

#include "plan/knobs.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

enum class NodeShape {
  kLarge,  // all-reduce: intra-node reduce-scatter -> NCCL all-reduce of this rank's shard ->
           // intra-node all-gather (a count that does not divide by L is padded in a scratch)
  kSmall,  // all-reduce: intra-node all-reduce -> NCCL all-reduce of the whole message, on every
           // local index at once (no reduce-scatter / all-gather launches)
  kRsag,   // reduce-scatter: intra-node reduce-scatter per machine's segments -> NCCL
           // reduce-scatter; all-gather: NCCL all-gather -> intra-node all-gather per machine
};

struct NodePlanArgs {
  tpcommColl_t coll = tpcommCollAllReduce;
  size_t bytes = 0;  // the call's payload (reduce-scatter / all-gather: world x the count's bytes)
  int nodes = 2;
  int local_ranks = 1;
  bool contiguous = true;   // comm/node/node_layout.h
  int small_bytes = 65536;  // LaunchKnobs::node_small_bytes (0: never small)
};

struct NodePlan {
  tpcommResult_t error = tpcommSuccess;
  NodeShape shape = NodeShape::kLarge;
  std::string why;  // the choice, or the refusal
};

// The shape rule (nodeRules, plan/rules.h, applies it and plans the legs).
NodePlan nodeShape(const NodePlanArgs& a);

// The legs as Explain names them, e.g. "hierarchical (large: 1048576 B > node_small_bytes
// 65536): p2p_reduce_scatter -> nccl all_reduce over 2 nodes -> p2p_all_gather". first / last:
// the intra-node legs' variants (the single-machine planner's choice for them); unused for a
// machine of one rank, where NCCL is the only leg.
std::string nodeLegsText(const NodePlanArgs& a, const NodePlan& p, int first, int last);

}  // namespace tpcomm
