#include "plan/fused_plan.h"

#include <algorithm>

#include "common/str_format.h"

namespace tpcomm {
namespace {

constexpr int kFusedThreads = 512;  // kThreadsPerBlock: a row's vectors, 32 threads at least

bool overPeerMemory(tpcommVariant_t v) {
  return v == tpcommVariantP2pOneShotLean || v == tpcommVariantP2pOneShot ||
         v == tpcommVariantP2pTwoShot || v == tpcommVariantIsland;
}
bool overHostMemory(tpcommVariant_t v) {
  return v == tpcommVariantHostOneShotSentinelLean || v == tpcommVariantHostOneShotSentinel ||
         v == tpcommVariantHostOneShotLL || v == tpcommVariantHostTwoShotLL ||
         v == tpcommVariantHostBulk;
}

}  // namespace

bool isFusedVariant(tpcommVariant_t v) {
  return v == tpcommVariantFusedP2pOneShot || v == tpcommVariantFusedP2pOneShotFp8 ||
         v == tpcommVariantFusedHostOneShot || v == tpcommVariantFusedHostOneShotFp8;
}

FusedPlan planFusedCall(const CommFacts& f, const FusedCallArgs& call) {
  FusedPlan p;
  const size_t es = call.dtype == tpcommFloat32 ? 4 : 2;
  const size_t bytes = call.rows * call.hidden * es;
  p.ar = planCall(f, CallArgs{bytes, call.aligned});
  if (p.ar.decision.error != tpcommSuccess) {
    p.reason = p.ar.decision.reason;
    return p;
  }
  // The fused kernels are one-shots: the transport the all-reduce would use, the whole call in
  // one step (every rank then holds whole rows), rows of whole 16-byte vectors.
  const bool host = overHostMemory(p.ar.variant) && f.host_transport && f.knobs.host_sentinel;
  const bool peer = overPeerMemory(p.ar.variant);
  const size_t cap = host   ? f.slots.host_sentinel_step_bytes
                     : peer ? f.slots.oneshot_step_bytes
                            : 0;
  const bool whole = (call.hidden * es) % kVecBytes == 0 && call.aligned;
  std::string why_not;
  if (!host && !peer)
    why_not = "the all-reduce goes to " + std::string(tpcommVariantName(p.ar.variant));
  else if (!whole)
    why_not = "rows are not whole 16-byte vectors in aligned buffers";
  else if (bytes > cap)
    why_not = strFormat("%zu bytes exceed one step of the one-shot (%zu)", bytes, cap);
  if (why_not.empty() && bytes > 0) {
    p.variant = host ? (call.fp8 ? tpcommVariantFusedHostOneShotFp8 : tpcommVariantFusedHostOneShot)
                     : (call.fp8 ? tpcommVariantFusedP2pOneShotFp8 : tpcommVariantFusedP2pOneShot);
    const size_t hv = call.hidden * es / kVecBytes;
    const size_t max_blocks =
        static_cast<size_t>(f.knobs.max_blocks > 0 ? f.knobs.max_blocks : kDefaultMaxBlocks);
    p.blocks = static_cast<int>(std::max<size_t>(1, std::min(call.rows, max_blocks)));
    p.threads = static_cast<int>(
        std::min<size_t>(kFusedThreads, std::max<size_t>(32, (hv + 31) / 32 * 32)));
    // Ranks sharing a GPU: every rank's grid resident at once (plan/co_residency.h). The threads
    // follow the row, not the grid, so one cut suffices; the blocks loop over the other rows.
    const int fit = f.grid_caps ? f.grid_caps->capFor(p.variant, p.threads) : 0;
    const bool capped = fit > 0 && p.blocks > fit;
    if (capped) p.blocks = fit;
    p.region = cap / kVecBytes;
    p.pdl = f.knobs.pdl;
    p.reason =
        std::string("fused one-shot over ") + (host ? "host" : "peer") +
        strFormat(" memory, the epilogue in the kernel (%zu bytes, one step of %zu)", bytes, cap);
    if (capped) p.reason += "; " + coResidentNote(p.blocks, *f.grid_caps);
    return p;
  }
  p.variant = call.fp8 ? tpcommVariantAddRmsNormFp8 : tpcommVariantAddRmsNorm;
  p.reason = "unfused: " + std::string(tpcommVariantName(p.ar.variant)) +
             ", then the add+RMSNorm "
             "kernel (" +
             (why_not.empty() ? "nothing to reduce" : why_not) + ")";
  return p;
}

}  // namespace tpcomm
