#include "comm/call_common.h"

#include <cstring>

#include "common/error.h"
#include "common/log.h"

namespace tpcomm {

tpcommResult_t checkAsync(const tpcommComm* c, const char* op) {
  const HostError* e = c->staging.host_error;
  if (!e || e->code == 0) return tpcommSuccess;
  if (e->code == tpcommInvalidUsage)  // kernels/epoch_device.cuh, reportConcurrentCalls
    return fail(tpcommInvalidUsage,
                "%s: rank %d's communicator is broken: two of its calls ran at the same time (CUDA "
                "graphs holding its calls launched concurrently on two streams, or with its eager "
                "calls on another stream), so both read the same slots. Destroy the communicator, "
                "and launch such graphs one after another",
                op, c->rank);
  return fail(static_cast<tpcommResult_t>(e->code),
              "%s: rank %d's communicator is broken: an earlier call waited %d ms for rank %d "
              "(step %d) and gave up. Destroy the communicator (and check that peer)",
              op, c->rank, c->settings.timeout_ms, e->peer, e->step);
}

CommFacts factsOf(const tpcommComm* c) {
  CommFacts f;
  f.world = c->world;
  f.fabric = c->fabric;
  f.two_islands = c->two_islands;
  f.nccl_available = c->nccl != nullptr;
  f.host_transport = c->host_seg.dev != nullptr;
  f.forced_algo = c->settings.algo;
  f.strict = c->settings.strict;
  f.tuned = c->tuned;
  f.slots = c->slots;
  f.knobs = c->knobs;
  f.ranks_share_gpu = c->ranks_share_gpu;
  return f;
}

tpcommResult_t checkStream(const tpcommComm* c, cudaStream_t s, const char* op,
                           cudaStreamCaptureStatus* cap) {
  *cap = cudaStreamCaptureStatusNone;
  TPCOMM_CUDA_CHECK(cudaStreamIsCapturing(s, cap));
  const bool default_stream = s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread;
  if (*cap == cudaStreamCaptureStatusNone && !default_stream) {
    int stream_dev = -1;
    TPCOMM_CUDA_CHECK(cudaStreamGetDevice(s, &stream_dev));
    if (stream_dev != c->device)
      return fail(tpcommInvalidArgument,
                  "%s: the stream belongs to GPU %d, but rank %d's communicator is on GPU %d", op,
                  stream_dev, c->rank, c->device);
  }
  return tpcommSuccess;
}

void recordCall(tpcommComm* c, const CallRecord& r, bool capturing) {
  c->variant_calls[r.variant]++;
  if (!r.epilogue) {
    c->stats.calls[r.algo]++;
    c->stats.bytes += r.bytes;
    if (r.fallback) c->stats.fallbacks++;
    if (capturing) c->stats.captured++;
  }
  if (c->ptx_jit && isKernelVariant(r.variant)) c->ptx_jit_calls++;
  c->last.algo = r.algo;
  c->last.variant = r.variant;
  c->last.bytes = r.bytes;
  c->last.datatype = static_cast<int>(r.dtype);
  c->last.blocks = r.blocks;
  strncpy(c->last.reason, r.reason->c_str(), sizeof(c->last.reason) - 1);
  c->last.reason[sizeof(c->last.reason) - 1] = '\0';
  if (r.fallback && !r.epilogue && !c->logged_fallback_sizes[r.bytes]) {
    c->logged_fallback_sizes[r.bytes] = true;
    TPCOMM_INFO(COLL, "rank %d: %zu bytes served by NCCL (%s)", c->rank, r.bytes,
                r.reason->c_str());
  }
  TPCOMM_DEBUG(COLL, "rank %d: %s %zu bytes -> %s, %d blocks%s", c->rank, r.op, r.bytes,
               tpcommVariantName(r.variant), r.blocks, capturing ? " (captured)" : "");
}

}  // namespace tpcomm
