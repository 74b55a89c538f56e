#include "plan/node_plan.h"

#include <cstdio>

namespace tpcomm {

NodePlan planNodeCall(const NodePlanArgs& a) {
  NodePlan p;
  char why[160];
  if (a.coll != tpcommCollAllReduce) {
    p.shape = NodeShape::kHalf;
    if (!a.contiguous) {
      p.error = tpcommUnsupported;
      p.why =
          "across machines, reduce-scatter and all-gather need every machine's ranks to be "
          "consecutive global ranks (machine n: ranks n*L .. n*L+L-1), as torchrun numbers them";
      return p;
    }
    p.why = "hierarchical";
    return p;
  }
  const bool fits = a.bytes <= static_cast<size_t>(a.small_bytes);
  // With two machines every local index's NCCL sum is a + b, the same bits in either order; with
  // more, the NCCL communicators of the local indices may sum in different orders (NCCL promises
  // no order), and the ranks of one machine would disagree in the last bit.
  const bool allowed = a.nodes == 2;
  if (a.forced == 2 || (a.forced == 0 && !fits) || !allowed) {
    p.shape = NodeShape::kLarge;
    if (a.forced == 2)
      snprintf(why, sizeof(why), "large: forced");
    else if (!allowed && (a.forced == 1 || fits))
      snprintf(why, sizeof(why), "large: small needs 2 nodes, not %d", a.nodes);
    else
      snprintf(why, sizeof(why), "large: %zu B > node_small_bytes %d", a.bytes, a.small_bytes);
  } else {
    p.shape = NodeShape::kSmall;
    if (a.forced == 1)
      snprintf(why, sizeof(why), "small: forced");
    else
      snprintf(why, sizeof(why), "small: %zu B <= node_small_bytes %d", a.bytes, a.small_bytes);
  }
  p.why = why;
  return p;
}

std::string nodeLegsText(const NodePlanArgs& a, const NodePlan& p, int first, int last) {
  if (p.error != tpcommSuccess) return p.why;
  const std::string over = " over " + std::to_string(a.nodes) + " nodes";
  const char* f = tpcommVariantName(first);
  const char* l = tpcommVariantName(last);
  const std::string head = "hierarchical (" + p.why + "): ";
  const bool solo = a.local_ranks == 1;
  switch (p.shape) {
    case NodeShape::kSmall:
      return head + (solo ? "" : std::string(f ? f : "?") + " -> ") + "nccl all_reduce" + over;
    case NodeShape::kLarge:
      return head + (solo ? "nccl all_reduce" + over
                          : std::string(f ? f : "?") + " -> nccl all_reduce" + over + " -> " +
                                (l ? l : "?"));
    case NodeShape::kHalf:
      if (a.coll == tpcommCollReduceScatter)
        return "hierarchical: " + (solo ? "" : std::string(f ? f : "?") + " per node -> ") +
               "nccl reduce_scatter" + over;
      return "hierarchical: nccl all_gather" + over +
             (solo ? "" : " -> " + std::string(l ? l : "?") + " per node");
  }
  return "";
}

}  // namespace tpcomm
