#include "plan/node_plan.h"

#include <cstdio>

#include "plan/rules.h"

namespace tpcomm {

NodePlan nodeShape(const NodePlanArgs& a) {
  NodePlan p;
  char why[160];
  if (a.coll != tpcommCollAllReduce) {
    p.shape = NodeShape::kRsag;
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
  const bool fits = a.small_bytes > 0 && a.bytes <= static_cast<size_t>(a.small_bytes);
  // With two machines every local index's NCCL sum is a + b, the same bits in either order; with
  // more, the NCCL communicators of the local indices may sum in different orders (NCCL promises
  // no order), and the ranks of one machine would disagree in the last bit.
  const bool allowed = a.nodes == 2;
  if (!fits || !allowed) {
    p.shape = NodeShape::kLarge;
    if (!fits)
      snprintf(why, sizeof(why), "large: %zu B > node_small_bytes %d", a.bytes, a.small_bytes);
    else
      snprintf(why, sizeof(why), "large: small needs 2 nodes, not %d", a.nodes);
  } else {
    p.shape = NodeShape::kSmall;
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
    case NodeShape::kRsag:
      if (a.coll == tpcommCollReduceScatter)
        return "hierarchical: " + (solo ? "" : std::string(f ? f : "?") + " per node -> ") +
               "nccl reduce_scatter" + over;
      return "hierarchical: nccl all_gather" + over +
             (solo ? "" : " -> " + std::string(l ? l : "?") + " per node");
  }
  return "";
}

namespace {

// The intra-node legs' bytes: what each local call moves (whole local messages). count: the
// elements of an all-reduce, or of one rank's run of a reduce-scatter / all-gather.
struct LegBytes {
  size_t first = 0, last = 0;
};

LegBytes legBytes(const NodePlanArgs& a, const NodePlan& p, size_t count, size_t es) {
  const size_t L = static_cast<size_t>(a.local_ranks);
  if (p.shape == NodeShape::kSmall) return {count * es, 0};
  if (p.shape == NodeShape::kLarge) {
    const size_t padded = (count + L - 1) / L * L * es;
    return {padded, padded};
  }
  return {L * count * es, L * count * es};  // one machine's segments
}

}  // namespace

CallPlan nodeRules(const CommFacts& f, const Call& call) {
  if (call.rows > 0) {
    Call ar{call.bytes, true, tpcommCollAllReduce};
    ar.dtype = call.dtype;
    CallPlan p = nodeRules(f, ar);
    CommFacts local = f;
    local.nodes = 1;
    epilogueAfter(local, call, "across machines: the hierarchical all-reduce, then add_rmsnorm",
                  &p.epilogue);
    return p;
  }
  const NodePlanArgs a{call.collective, call.bytes,        f.nodes,
                       f.world,         f.node_contiguous, f.knobs.node_small_bytes};
  const NodePlan np = nodeShape(a);
  CallPlan p;
  if (np.error != tpcommSuccess) {
    p.decision.error = np.error;
    p.decision.reason = np.why;
  } else {
    // The legs, as for 16-byte aligned buffers and runs (what torch and the engines allocate),
    // planned over this machine's ranks.
    CommFacts local = f;
    local.nodes = 1;
    const size_t es = dtypeSize(call.dtype);
    const size_t runs = a.coll == tpcommCollAllReduce ? 1 : static_cast<size_t>(f.nodes * f.world);
    const LegBytes b = legBytes(a, np, call.bytes / es / runs, es);
    Call leg;
    leg.collective = np.shape == NodeShape::kSmall   ? tpcommCollAllReduce
                     : a.coll == tpcommCollAllGather ? tpcommCollAllGather
                                                     : tpcommCollReduceScatter;
    leg.bytes = b.first;
    leg.dtype = call.dtype;
    const CallPlan first = planCall(local, leg);
    // The large shape's last leg is an all-gather of its own; the other shapes name the first.
    tpcommVariant_t last = first.variant;
    if (np.shape == NodeShape::kLarge) {
      leg.collective = tpcommCollAllGather;
      leg.bytes = b.last;
      last = planCall(local, leg).variant;
    }
    if (f.world > 1) {
      p = first;
    } else {  // one rank a machine: NCCL is the only leg
      p.decision.algo = tpcommAlgoNccl;
      p.variant = ncclVariant();
    }
    p.node.text = nodeLegsText(a, np, first.variant, last);
  }
  p.node.shape = np.shape;
  p.node.error = np.error;
  p.node.why = np.why;
  if (p.node.text.empty()) p.node.text = np.why;
  return p;
}

}  // namespace tpcomm
