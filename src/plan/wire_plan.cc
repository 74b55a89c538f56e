// The quantized wire (issue 37; kernels/layout/wire_codec.h, kernels/twoshot_pull_wire.cu): where
// an opted-in all-reduce (the wire knob, TPCOMM_WIRE) takes it. Never by default, and only the
// plain all-reduce (planCall applies it there: the fused call, reduce-scatter and all-gather keep
// their wire). An all-reduce of wire_min_bytes or more over PCIe peer memory whose policy chose a
// large-message algorithm (a two-shot, an island, or NCCL) runs the two-shot pull in the codec
// instead: every byte crosses the fabric by loads, as on the collapsing switches the pull variants
// exist for, at a fraction of the bytes (wireBytes). Over NVLink the links are not the limit: a
// forced twoshot_pull takes it there (how one GPU tests it), nothing else. Not measured on a
// PCIe box yet: the opt-in is the user's call, and the reason says what it replaced.
#include <string>

#include "common/str_format.h"
#include "kernels/layout/wire_codec.h"
#include "plan/rules.h"

namespace tpcomm {
namespace {

// The all-reduce row of the variant table that carries `codec` (VariantRow::wire).
tpcommVariant_t wireVariant(int codec) {
  int rows = 0;
  const VariantRow* all = variantRows(&rows);
  for (int i = 0; i < rows; ++i)
    if (all[i].wire == codec && all[i].collective == VariantCollective::kAllReduce)
      return all[i].id;
  return tpcommVariantNone;
}

bool largeMessageAlgo(int algo) {
  return algo == tpcommAlgoTwoShot || algo == tpcommAlgoTwoShotPull || algo == tpcommAlgoIsland ||
         algo == tpcommAlgoIslandPull || algo == tpcommAlgoNccl;
}

// Why an opted-in call keeps the full-precision wire ("" where the codec takes it).
std::string whyNotWire(const CommFacts& f, const Call& call, int algo) {
  const bool forced = f.forced_algo > tpcommAlgoAuto;
  if (call.bytes < static_cast<size_t>(f.knobs.wire_min_bytes))
    return strFormat("below wire_min_bytes=%d", f.knobs.wire_min_bytes);
  if (forced) return algo == tpcommAlgoTwoShotPull ? "" : "the forced algorithm has no codec";
  if (f.fabric != Fabric::kPcie) return "not over PCIe peer memory";
  return largeMessageAlgo(algo) ? "" : "a one-shot's size";
}

}  // namespace

CallPlan wireRules(const CommFacts& f, const Call& call, CallPlan p) {
  // Under TPCOMM_STRICT=1 a call the policy hands to NCCL is refused: the codec may serve it.
  const bool refused_nccl = p.decision.error == tpcommFallbackRefused;
  if (f.knobs.wire == 0 || (p.decision.error != tpcommSuccess && !refused_nccl)) return p;
  const char* codec = wireCodecName(f.knobs.wire);
  const std::string why_not = whyNotWire(f, call, refused_nccl ? tpcommAlgoNccl : p.decision.algo);
  if (!why_not.empty()) {
    p.decision.reason += strFormat("; wire=%s not taken (%s)", codec, why_not.c_str());
    return p;
  }
  const WireCodec c = static_cast<WireCodec>(f.knobs.wire);
  const size_t elems = call.bytes / dtypeSize(call.dtype);
  CallPlan q;
  q.decision = p.decision;
  q.decision.error = tpcommSuccess;
  q.decision.algo = tpcommAlgoTwoShotPull;
  q.decision.fallback = false;  // tpcomm runs it, where the policy had handed it to NCCL
  q.decision.reason = strFormat(
      "two-shot pull over the %s wire (opt-in: wire=%s from wire_min_bytes=%d; %zu bytes a "
      "rank moves per segment instead of %zu); in place of %s: %s",
      codec, codec, f.knobs.wire_min_bytes, wireBytes(c, elems), call.bytes,
      refused_nccl ? "nccl" : tpcommVariantName(p.variant), p.decision.reason.c_str());
  q.variant = wireVariant(f.knobs.wire);
  q.chunk_vecs = f.slots.pull_chunk_vecs;  // the kernel's steps follow its codec's slot layout
  q.grid = planGrid(tpcommAlgoTwoShotPull, call.bytes, q.chunk_vecs * kVecBytes, f.world, f.knobs,
                    residentCap(f));
  q.pdl = f.knobs.pdl;
  q.aligned = call.aligned;
  q.threads = launchedThreads(q.variant, q.grid.threads);
  return q;
}

}  // namespace tpcomm
