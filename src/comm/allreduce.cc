// tpcommAllReduce: validate -> check the communicator is healthy -> ask the planner -> launch the
// planned variant (or hand to NCCL, counted and logged) -> record what ran.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>

#include "comm/comm.h"
#include "comm/nccl_fallback.h"
#include "comm/registry.h"
#include "comm/validate.h"
#include "common/error.h"
#include "common/log.h"
#include "kernels/algo_launch.h"
#include "plan/planner.h"

namespace tpcomm {
namespace {

// An error a kernel left in the mapped word (a peer that never answered) poisons the communicator.
tpcommResult_t checkAsync(const tpcommComm* c, const char* op) {
  const HostError* e = c->staging.host_error;
  if (!e || e->code == 0) return tpcommSuccess;
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
  return f;
}

// The plan of the last call, reused while consecutive calls have the same size and alignment
// (the planner is a pure function of them), so the hot path builds no strings.
const CallPlan& planOf(tpcommComm* c, const CallArgs& call) {
  if (call.bytes != c->cached_call.bytes || call.aligned != c->cached_call.aligned ||
      !c->cached_valid) {
    c->cached = planCall(factsOf(c), call);
    c->cached_call = call;
    c->cached_valid = true;
  }
  return c->cached;
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % kVecBytes == 0;
}

void record(tpcommComm* c, const CallPlan& p, size_t bytes, tpcommDataType_t dt, bool capturing) {
  const Decision& d = p.decision;
  const int blocks = isKernelVariant(p.variant) ? p.grid.blocks : 0;
  c->stats.calls[d.algo]++;
  c->variant_calls[p.variant]++;
  c->stats.bytes += bytes;
  if (d.fallback) c->stats.fallbacks++;
  if (capturing) c->stats.captured++;
  if (c->ptx_jit && isKernelVariant(p.variant)) c->ptx_jit_calls++;
  c->last.algo = d.algo;
  c->last.variant = p.variant;
  c->last.bytes = bytes;
  c->last.datatype = static_cast<int>(dt);
  c->last.blocks = blocks;
  strncpy(c->last.reason, d.reason.c_str(), sizeof(c->last.reason) - 1);
  c->last.reason[sizeof(c->last.reason) - 1] = '\0';
  if (d.fallback && !c->logged_fallback_sizes[bytes]) {
    c->logged_fallback_sizes[bytes] = true;
    TPCOMM_INFO(COLL, "rank %d: %zu bytes served by NCCL (%s)", c->rank, bytes, d.reason.c_str());
  }
  TPCOMM_DEBUG(COLL, "rank %d: allreduce %zu bytes -> %s, %d blocks%s", c->rank, bytes,
               tpcommVariantName(p.variant), blocks, capturing ? " (captured)" : "");
}

// Launches on the communicator's device, whatever device is current on this thread.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    cudaGetDevice(&saved_);
    if (saved_ != device) cudaSetDevice(device);
  }
  ~DeviceGuard() {
    int now = -1;
    cudaGetDevice(&now);
    if (now != saved_) cudaSetDevice(saved_);
  }

 private:
  int saved_ = -1;
};

}  // namespace
}  // namespace tpcomm

using namespace tpcomm;

extern "C" tpcommResult_t tpcommAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                          tpcommDataType_t datatype, tpcommRedOp_t op,
                                          tpcommComm_t comm, tpcommStream_t stream) {
  TPCOMM_CHECK(checkComm(comm, "tpcommAllReduce"));
  TPCOMM_CHECK(checkAsync(comm, "tpcommAllReduce"));
  size_t bytes = 0;
  TPCOMM_CHECK(validateAllReduceArgs(sendbuff, recvbuff, count, static_cast<int>(datatype),
                                     static_cast<int>(op), &bytes));
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  DeviceGuard guard(comm->device);
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  TPCOMM_CUDA_CHECK(cudaStreamIsCapturing(s, &cap));
  // The stream must be on the communicator's GPU. cudaStreamGetDevice is refused while a stream
  // captures (cudaErrorStreamCaptureUnsupported), so captured calls rely on the launch itself,
  // which fails on a stream of another device and thereby invalidates the capture.
  const bool default_stream = s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread;
  if (cap == cudaStreamCaptureStatusNone && !default_stream) {
    int stream_dev = -1;
    TPCOMM_CUDA_CHECK(cudaStreamGetDevice(s, &stream_dev));
    if (stream_dev != comm->device)
      return fail(tpcommInvalidArgument,
                  "tpcommAllReduce: the stream belongs to GPU %d, but rank %d's communicator is "
                  "on GPU %d",
                  stream_dev, comm->rank, comm->device);
  }

  const CallPlan& p = planOf(comm, CallArgs{bytes, aligned16(sendbuff) && aligned16(recvbuff)});
  const Decision& d = p.decision;
  if (d.error != tpcommSuccess)
    return fail(d.error, "tpcommAllReduce: %zu bytes on rank %d: %s", bytes, comm->rank,
                d.reason.c_str());
  if (p.variant == tpcommVariantNccl) {
    TPCOMM_CHECK(ncclFallbackAllReduce(comm, sendbuff, recvbuff, count, datatype, s));
  } else {
    const LaunchArgs a{
        p.variant, p.grid.blocks, p.grid.threads, p.grid.push_batch, p.grid.push_eighths,
        p.pdl,     p.aligned,     p.chunk_vecs,   p.geometry,        sendbuff,
        recvbuff,  count,         datatype};
    TPCOMM_CHECK(launchAllReduceKernel(comm->dev, a, s));
  }
  record(comm, p, bytes, datatype, cap != cudaStreamCaptureStatusNone);
  return tpcommSuccess;
}

extern "C" tpcommResult_t tpcommCommExplain(tpcommComm_t comm, size_t count,
                                            tpcommDataType_t datatype, tpcommCallInfo_t* info) {
  TPCOMM_CHECK(checkComm(comm, "tpcommCommExplain"));
  if (!info) return fail(tpcommInvalidArgument, "tpcommCommExplain: info is NULL");
  if (dtypeIndex(datatype) < 0)
    return fail(tpcommInvalidArgument, "tpcommCommExplain: datatype %d is not supported",
                static_cast<int>(datatype));
  const size_t bytes = count * dtypeSize(datatype);
  // As for 16-byte aligned buffers (what torch and the engines allocate).
  const CallPlan p = planCall(factsOf(comm), CallArgs{bytes, true});
  const Decision& d = p.decision;
  *info = tpcommCallInfo_t{};
  info->algo = d.error == tpcommSuccess ? d.algo : tpcommAlgoAuto;
  info->variant = p.variant;
  info->bytes = bytes;
  info->datatype = static_cast<int>(datatype);
  info->blocks = isKernelVariant(p.variant) ? p.grid.blocks : 0;
  strncpy(info->reason, d.reason.c_str(), sizeof(info->reason) - 1);
  return d.error;
}
