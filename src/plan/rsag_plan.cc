#include "plan/rsag_plan.h"
#include "plan/rules.h"

namespace tpcomm {

tpcommVariant_t rsagVariant(tpcommColl_t coll, int algo, bool stores_collapse) {
  if (coll != tpcommCollReduceScatter && coll != tpcommCollAllGather) return kNoVariant;
  const bool rs = coll == tpcommCollReduceScatter;
  const tpcommVariant_t push = rs ? tpcommVariantP2pReduceScatter : tpcommVariantP2pAllGather;
  const tpcommVariant_t pull =
      rs ? tpcommVariantP2pReduceScatterPull : tpcommVariantP2pAllGatherPull;
  switch (algo) {
    case tpcommAlgoNccl:
      return ncclVariant();
    case tpcommAlgoOneShot:
    case tpcommAlgoTwoShot:
    case tpcommAlgoIsland:
      return push;
    case tpcommAlgoOneShotPull:
    case tpcommAlgoTwoShotPull:
    case tpcommAlgoIslandPull:
      return pull;
    case tpcommAlgoOneShotCe:
      return stores_collapse ? pull : push;
    case tpcommAlgoHostOneShot:
    case tpcommAlgoHostTwoShot:
    case tpcommAlgoHostBulk:
      return rs ? tpcommVariantHostReduceScatter : tpcommVariantHostAllGather;
  }
  return kNoVariant;
}

// call.bytes: the whole message (world x the per-rank count's bytes), which is what one step of
// the two-shot's slots carries, as in an all-reduce of those bytes. call.aligned: both buffers
// and the per-rank runs are 16-byte aligned. The plan's algorithm is twoshot, twoshot_pull,
// host_twoshot or nccl (what the stats count).
CallPlan rsagRules(const CommFacts& f, const Call& call) {
  const tpcommColl_t coll = call.collective;
  CallPlan p;
  p.decision = choose(policyInputOf(f, call.bytes));
  Decision& d = p.decision;
  const char* what = coll == tpcommCollReduceScatter ? "reduce-scatter" : "all-gather";
  if (d.error != tpcommSuccess) {
    d.reason = std::string(what) + ": " + d.reason;
    return p;
  }
  // The probe's verdict as the policy reads it (policy.cc): it steers PCIe only.
  const bool collapse =
      f.fabric == Fabric::kPcie && f.fabric_verdict == FabricVerdict::kWriteCollapse;
  p.variant = rsagVariant(coll, d.algo, collapse);
  if (p.variant == kNoVariant) {
    d.error = tpcommInternalError;
    d.reason = std::string(what) + ": no half of algorithm " + std::to_string(d.algo);
    return p;
  }
  if (isNcclVariant(p.variant)) {
    d.reason = std::string(what) + " by NCCL, as the all-reduce of these bytes: " + d.reason;
    return p;
  }
  const bool host = isHostAlgo(d.algo);
  const bool pull =
      p.variant == tpcommVariantP2pReduceScatterPull || p.variant == tpcommVariantP2pAllGatherPull;
  const int half_of = host   ? tpcommAlgoHostTwoShot
                      : pull ? tpcommAlgoTwoShotPull
                             : tpcommAlgoTwoShot;
  d.reason = std::string(what) + " half of " + tpcommAlgoName(half_of) +
             ", as the all-reduce of these bytes: " + d.reason;
  // The copy-engine one-shot has no halves: the two-shot's over the protocol this fabric takes
  // (pull where stores collapse, as the policy would) run the call.
  if (d.algo == tpcommAlgoOneShotCe)
    d.reason += collapse ? "; the copy engines have no half-collective variant: the pull halves, "
                           "since SM stores collapse on this fabric"
                         : "; the copy engines have no half-collective variant: the push halves";
  d.algo = half_of;
  p.chunk_vecs = host   ? f.slots.host_chunk_vecs
                 : pull ? f.slots.pull_chunk_vecs
                        : f.slots.twoshot_chunk_vecs;
  // Where ranks share a GPU, the grid must fit beside theirs (plan/co_residency.h).
  p.grid = planGrid(d.algo, call.bytes, p.chunk_vecs * kVecBytes, f.world, f.knobs, residentCap(f));
  noteCappedGrid(f, p.grid, &d.reason);
  p.threads = launchedThreads(p.variant, p.grid.threads);
  p.pdl = f.knobs.pdl;
  p.aligned = call.aligned;
  return p;
}

}  // namespace tpcomm
