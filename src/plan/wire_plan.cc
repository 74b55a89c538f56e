// The quantized wire (issue 37; kernels/layout/wire_codec.h): where an opted-in all-reduce (the
// wire knob, TPCOMM_WIRE, or the call's own codec: Call::wire) takes it, and in which form. Never
// by default, and only the plain all-reduce (planCall applies it there: the fused call,
// reduce-scatter and all-gather keep their wire). An all-reduce of wire_min_bytes or more whose
// policy chose a large-message algorithm (a two-shot, an island, host_bulk, or NCCL) runs the
// two-shot in the codec instead, in the form of the fabric it would have used:
//   * over PCIe peer memory, pull (twoshot_pull_wire.cu) where the policy pulls, or hands the call
//     to NCCL on a box whose switches collapse posted writes (the fabric probe's verdict); push
//     (twoshot_wire.cu) where it pushes, or hands it to NCCL elsewhere;
//   * over pinned host memory (no P2P), the host form (twoshot_pull_wire.cu over host outboxes).
// Over NVLink the links are not the limit: a forced twoshot or twoshot_pull takes it there (how
// one GPU tests it), nothing else. Within the opt-in, a tuning table's wire_from (tpcomm tune's
// measurement on this machine) keeps full precision where the codec measured slower; without one
// the opt-in is the user's call (no PCIe box has measured it yet), and the reason says what it
// replaced.
#include <string>

#include "common/str_format.h"
#include "kernels/layout/wire_codec.h"
#include "plan/rules.h"

namespace tpcomm {
namespace {

// The two-shot a codec replaces `algo` with (the algorithm the call then reports: its form), or
// Auto where it cannot: `why` says why. algo: the policy's choice, NCCL where strict mode refused
// it.
int wireAlgo(const CommFacts& f, int algo, std::string* why) {
  const bool forced = f.forced_algo > tpcommAlgoAuto;
  if (forced) {
    if (algo == tpcommAlgoTwoShot || algo == tpcommAlgoTwoShotPull) return algo;
    if ((algo == tpcommAlgoHostTwoShot || algo == tpcommAlgoHostBulk) && f.host_transport)
      return tpcommAlgoHostTwoShot;
    *why = "the forced algorithm has no codec";
  } else if (f.fabric == Fabric::kHost) {
    if (algo == tpcommAlgoHostTwoShot || algo == tpcommAlgoHostBulk || algo == tpcommAlgoNccl)
      return wireFormOf(f.fabric, f.fabric_verdict);
    *why = "a one-shot's size";
  } else if (f.fabric == Fabric::kPcie) {
    if (algo == tpcommAlgoTwoShot || algo == tpcommAlgoIsland) return tpcommAlgoTwoShot;
    if (algo == tpcommAlgoTwoShotPull || algo == tpcommAlgoIslandPull) return tpcommAlgoTwoShotPull;
    if (algo == tpcommAlgoNccl) return wireFormOf(f.fabric, f.fabric_verdict);
    *why = "a one-shot's size";
  } else {
    *why = "not over PCIe or host memory";
  }
  return tpcommAlgoAuto;
}

// The kernel's row for a form, and the vectors of a step the grid is sized by (the kernels take
// their steps from the codec's slot layout: wire_codec.h, WireSlot).
tpcommVariant_t formVariant(int codec, int algo) {
  return algo == tpcommAlgoHostTwoShot
             ? allReduceRow(VariantTransport::kHost, true, codec)
             : allReduceRow(VariantTransport::kPeer, algo == tpcommAlgoTwoShotPull, codec);
}
size_t formChunkVecs(const CommFacts& f, int algo) {
  return algo == tpcommAlgoTwoShot       ? f.slots.twoshot_chunk_vecs
         : algo == tpcommAlgoTwoShotPull ? f.slots.pull_chunk_vecs
                                         : f.slots.host_pull_chunk_vecs;
}

// The tuning table's wire_from for the codec (CommFacts::tuned_wire_from; 0: none). A forced
// algorithm runs as forced, the table's rules aside (plan/policy.cc), and so does its codec: that
// is also how `tpcomm tune` measures the codec again under an earlier table.
size_t tunedWireFrom(const CommFacts& f, int codec) {
  const bool forced = f.forced_algo > tpcommAlgoAuto;
  return !forced && codec > 0 && codec < kWireCodecs ? f.tuned_wire_from[codec] : 0;
}

}  // namespace

int wireFormOf(Fabric fabric, FabricVerdict verdict) {
  if (fabric == Fabric::kHost) return tpcommAlgoHostTwoShot;
  if (fabric == Fabric::kPcie)
    return verdict == FabricVerdict::kWriteCollapse ? tpcommAlgoTwoShotPull : tpcommAlgoTwoShot;
  return tpcommAlgoAuto;
}

CallPlan wireRules(const CommFacts& f, const Call& call, CallPlan p) {
  // Under TPCOMM_STRICT=1 a call the policy hands to NCCL is refused: the codec may serve it.
  const bool refused_nccl = p.decision.error == tpcommFallbackRefused;
  const int codec_id = call.wire >= 0 ? call.wire : f.knobs.wire;
  if (codec_id == 0 || (p.decision.error != tpcommSuccess && !refused_nccl)) return p;
  const char* codec = wireCodecName(codec_id);
  const char* by = call.wire >= 0 ? "the call's wire" : "wire";
  std::string why_not;
  int algo = tpcommAlgoAuto;
  if (call.bytes < static_cast<size_t>(f.knobs.wire_min_bytes))
    why_not = strFormat("below wire_min_bytes=%d", f.knobs.wire_min_bytes);
  else if (const size_t from = tunedWireFrom(f, codec_id); call.bytes < from)
    why_not = from == SIZE_MAX ? "tpcomm tune measured it slower at every size measured"
                               : strFormat("tpcomm tune measured it slower below %zu bytes", from);
  else
    algo = wireAlgo(f, refused_nccl ? tpcommAlgoNccl : p.decision.algo, &why_not);
  if (algo == tpcommAlgoAuto) {
    p.decision.reason += strFormat("; %s=%s not taken (%s)", by, codec, why_not.c_str());
    return p;
  }
  const WireCodec c = static_cast<WireCodec>(codec_id);
  const size_t elems = call.bytes / dtypeSize(call.dtype);
  CallPlan q;
  q.decision = p.decision;
  q.decision.error = tpcommSuccess;
  q.decision.algo = algo;
  q.decision.fallback = false;  // tpcomm runs it, where the policy had handed it to NCCL
  q.decision.reason = strFormat(
      "%s over the %s wire (opt-in: %s=%s from wire_min_bytes=%d; %zu bytes a rank moves per "
      "segment instead of %zu); in place of %s: %s",
      tpcommAlgoName(algo), codec, by, codec, f.knobs.wire_min_bytes, wireBytes(c, elems),
      call.bytes, refused_nccl ? "nccl" : tpcommVariantName(p.variant), p.decision.reason.c_str());
  // Every form's grid as the pull form's: a thread owns whole groups of every segment.
  pullTwoShotLaunch(f, call, formVariant(codec_id, algo), formChunkVecs(f, algo), &q);
  return q;
}

}  // namespace tpcomm
