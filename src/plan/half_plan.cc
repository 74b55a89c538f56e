#include "plan/half_plan.h"

namespace tpcomm {

tpcommVariant_t halfVariant(tpcommColl_t coll, int algo) {
  if (coll != tpcommCollReduceScatter && coll != tpcommCollAllGather) return tpcommVariantNone;
  const bool rs = coll == tpcommCollReduceScatter;
  switch (algo) {
    case tpcommAlgoNccl:
      return tpcommVariantNccl;
    case tpcommAlgoOneShot:
    case tpcommAlgoTwoShot:
    case tpcommAlgoIsland:
    // island_pull maps to the pull halves (tpcommVariantP2pReduceScatterPull / AllGatherPull)
    // once they exist (i24-half-pull); until then to the push halves, as island.
    case tpcommAlgoIslandPull:
      return rs ? tpcommVariantP2pReduceScatter : tpcommVariantP2pAllGather;
    case tpcommAlgoHostOneShot:
    case tpcommAlgoHostTwoShot:
    case tpcommAlgoHostBulk:
      return rs ? tpcommVariantHostReduceScatter : tpcommVariantHostAllGather;
  }
  return tpcommVariantNone;
}

CallPlan planHalfCall(const CommFacts& f, tpcommColl_t coll, const CallArgs& call) {
  CallPlan p;
  p.decision = choose(policyInputOf(f, call.bytes));
  Decision& d = p.decision;
  const char* what = coll == tpcommCollReduceScatter ? "reduce-scatter" : "all-gather";
  if (d.error != tpcommSuccess) {
    d.reason = std::string(what) + ": " + d.reason;
    return p;
  }
  p.variant = halfVariant(coll, d.algo);
  if (p.variant == tpcommVariantNone) {
    d.error = tpcommInternalError;
    d.reason = std::string(what) + ": no half of algorithm " + std::to_string(d.algo);
    return p;
  }
  if (p.variant == tpcommVariantNccl) {
    d.reason = std::string(what) + " by NCCL, as the all-reduce of these bytes: " + d.reason;
    return p;
  }
  const bool host = isHostAlgo(d.algo);
  d.reason = std::string(what) + " half of " + (host ? "host_twoshot" : "twoshot") +
             ", as the all-reduce of these bytes: " + d.reason;
  d.algo = host ? tpcommAlgoHostTwoShot : tpcommAlgoTwoShot;
  p.chunk_vecs = host ? f.slots.host_chunk_vecs : f.slots.twoshot_chunk_vecs;
  // Where ranks share a GPU, the grid must fit beside theirs (plan/co_residency.h).
  int cap[kThreadSteps];
  const bool capped = f.grid_caps && f.grid_caps->any();
  if (capped)
    for (int s = 0; s < kThreadSteps; ++s) cap[s] = f.grid_caps->capFor(p.variant, 32 * (s + 1));
  p.grid = planGrid(d.algo, call.bytes, p.chunk_vecs * kVecBytes, f.world, f.knobs,
                    capped ? cap : nullptr);
  if (p.grid.co_resident_capped)
    d.reason = coResidentNote(p.grid.blocks, *f.grid_caps) + "; " + d.reason;
  p.pdl = f.knobs.pdl;
  p.aligned = call.aligned;
  return p;
}

}  // namespace tpcomm
