#include "comm/call/call_common.h"

#include <cstring>

#include "comm/checks/stream_device.h"
#include "comm/lifecycle/async_error.h"
#include "comm/node/node_link.h"
#include "common/error.h"
#include "common/log.h"

namespace tpcomm {

tpcommResult_t checkAsync(const tpcommComm* c, const char* op) {
  if (c->nccl_watch && c->nccl_watch->hung())
    return fail(tpcommTimeout,
                "%s: rank %d's communicator is broken: an earlier %s. Destroy the communicator "
                "(and check its peers)",
                op, c->rank, c->nccl_watch->report().c_str());
  std::string link;
  if (nodeLinkHung(c, &link))
    return fail(tpcommTimeout,
                "%s: rank %d's communicator is broken: %s. Destroy the communicator (and check "
                "the other machines)",
                op, c->span->global_rank, link.c_str());
  const HostError* e = c->staging.host_error;
  if (!e || e->code == 0) return tpcommSuccess;
  const AsyncError a = readAsyncError(*e);
  return fail(static_cast<tpcommResult_t>(a.code), "%s",
              asyncErrorMessage(op, c->rank, c->settings.timeout_ms, a).c_str());
}

CommFacts factsOf(const tpcommComm* c) {
  CommFacts f;
  f.world = c->world;
  f.fabric = c->fabric;
  f.two_islands = c->two_islands;
  f.nccl_available = c->nccl != nullptr;
  f.host_transport = c->host_seg.dev != nullptr;
  f.ce_staging = c->dev.ce[c->rank] != nullptr;
  f.forced_algo = c->settings.algo;
  f.strict = c->settings.strict;
  takeTuned(c->tuned, &f);
  f.fabric_verdict = c->fabric_verdict;
  f.slots = c->slots;
  f.knobs = c->knobs;
  f.grid_caps = &c->grid_caps;
  f.clusters = c->clusters;
  return f;
}

CommFacts spanFactsOf(const tpcommComm* c) {
  CommFacts f = factsOf(c);
  if (c->span) {
    f.nodes = c->span->layout.nodes;
    f.node_contiguous = c->span->layout.contiguous;
  }
  return f;
}

LaunchArgs launchArgsOf(const CallPlan& p, const void* send, void* recv, size_t count,
                        tpcommDataType_t dt) {
  return LaunchArgs{p.variant,
                    p.grid.blocks,
                    p.threads,
                    p.grid.push_batch,
                    p.grid.push_eighths,
                    p.pdl,
                    p.aligned,
                    p.chunk_vecs,
                    p.geometry,
                    send,
                    recv,
                    count,
                    dt};
}

const CallPlan& plannedCall(tpcommComm* c, const Call& call, bool spanning) {
  return c->plans.get(call, spanning, [&] { return spanning ? spanFactsOf(c) : factsOf(c); });
}

tpcommResult_t checkStream(const tpcommComm* c, cudaStream_t s, const char* op,
                           cudaStreamCaptureStatus* cap) {
  *cap = cudaStreamCaptureStatusNone;
  TPCOMM_CUDA_CHECK(cudaStreamIsCapturing(s, cap));
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread)
    return tpcommSuccess;  // the current device's, which DeviceGuard made the communicator's
  const bool capturing = *cap != cudaStreamCaptureStatusNone;
  int stream_dev = -1;
  {
    RelaxedCaptureMode relaxed(capturing);
    TPCOMM_CHECK(streamDevice(s, &stream_dev, op));
  }
  if (stream_dev != c->device)
    return fail(
        tpcommInvalidArgument,
        "%s: the stream belongs to GPU %d, but rank %d's communicator is on GPU %d%s", op,
        stream_dev, c->rank, c->device,
        capturing ? " (refused before any launch: the stream's capture is still valid)" : "");
  return tpcommSuccess;
}

tpcommResult_t checkCallBuffers(tpcommComm* c, const char* op, cudaStreamCaptureStatus cap,
                                std::initializer_list<BufferArg> bufs) {
  return checkBuffers(&c->checked_buffers, c->device, c->rank, op,
                      cap != cudaStreamCaptureStatusNone, bufs);
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
