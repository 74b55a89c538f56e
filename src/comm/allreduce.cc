// tpcommAllReduce: validate -> check the communicator is healthy -> ask the policy -> launch (or
// hand to NCCL, counted and logged) -> record what ran.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>

#include "comm/comm.h"
#include "comm/registry.h"
#include "comm/validate.h"
#include "common/error.h"
#include "common/log.h"
#include "kernels/algo_launch.h"
#include "transport/nccl_fallback.h"

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

PolicyInput policyInput(const tpcommComm* c, size_t bytes) {
  PolicyInput in;
  in.world = c->world;
  in.bytes = bytes;
  in.fabric = c->fabric;
  in.two_islands = c->two_islands;
  in.nccl_available = c->nccl != nullptr;
  in.host_transport = c->host_seg.dev != nullptr;
  in.forced_algo = c->settings.algo;
  in.strict = c->settings.strict;
  in.tuned = c->tuned;
  return in;
}

// Bytes per step: `full` (what the slot layout holds), or less when a knob asks for shorter
// steps.
size_t stepBytes(int knob_bytes, size_t full) {
  const size_t knob = static_cast<size_t>(knob_bytes) / kVecBytes * kVecBytes;
  return knob > 0 ? std::min(knob, full) : full;
}
// The step a call takes (the launch knob applied), where the kernels' oneShotStepBytes and
// hostBulkStepBytes (launch.cu) give what one slot holds.
size_t bulkCallStepBytes(const tpcommComm* c) {
  return stepBytes(c->knobs.bulk_step_bytes, c->bulk_step_bytes);
}
size_t oneShotCallStepBytes(const tpcommComm* c) {
  return stepBytes(c->knobs.oneshot_step_bytes, c->oneshot_step_bytes);
}

// Vectors per step of a chunked algorithm (two-shot on its transport, island, host_bulk) and of
// the one-shot over peer memory; 0 for the LL one-shot, whose kernel takes a whole slot region
// per step.
size_t chunkOf(const tpcommComm* c, int algo) {
  switch (algo) {
    case tpcommAlgoOneShot:
      return oneShotCallStepBytes(c) / kVecBytes;
    case tpcommAlgoTwoShot:
      return c->chunk_vecs;
    case tpcommAlgoHostTwoShot:
      return c->host_chunk_vecs;
    case tpcommAlgoIsland:
      return c->island_chunk_vecs;
    case tpcommAlgoHostBulk:
      return bulkCallStepBytes(c) / kVecBytes;
    default:
      return 0;
  }
}

// Whether a host_oneshot call takes the sentinel protocol: it fits one step of the host sentinel
// inboxes (one step only: docs/PROTOCOL.md) and the knob allows it; otherwise LL packets.
bool hostSentinelCall(const tpcommComm* c, int algo, size_t bytes) {
  return algo == tpcommAlgoHostOneShot && c->knobs.host_sentinel &&
         bytes <= c->host_sentinel_step_bytes;
}

GridPlan gridOf(const tpcommComm* c, int algo, size_t bytes) {
  const size_t step = algo != tpcommAlgoHostOneShot      ? chunkOf(c, algo) * kVecBytes
                      : hostSentinelCall(c, algo, bytes) ? c->host_sentinel_step_bytes
                                                         : c->host_step_bytes;
  return planGrid(algo, bytes, step, c->world, c->knobs);
}

const Decision& decide(tpcommComm* c, size_t bytes) {
  if (bytes != c->cached_bytes) {
    c->cached = choose(policyInput(c, bytes));
    c->cached_bytes = bytes;
  }
  return c->cached;
}

void record(tpcommComm* c, const Decision& d, size_t bytes, tpcommDataType_t dt, int blocks,
            bool capturing) {
  c->stats.calls[d.algo]++;
  c->stats.bytes += bytes;
  if (d.fallback) c->stats.fallbacks++;
  if (capturing) c->stats.captured++;
  if (c->ptx_jit && isKernelAlgo(d.algo)) c->ptx_jit_calls++;
  c->last.algo = d.algo;
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
               tpcommAlgoName(d.algo), blocks, capturing ? " (captured)" : "");
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

  const Decision& d = decide(comm, bytes);
  if (d.error != tpcommSuccess)
    return fail(d.error, "tpcommAllReduce: %zu bytes on rank %d: %s", bytes, comm->rank,
                d.reason.c_str());
  int blocks = 0;
  if (d.algo == tpcommAlgoNccl) {
    TPCOMM_CHECK(ncclFallbackAllReduce(comm, sendbuff, recvbuff, count, datatype, s));
  } else if (isKernelAlgo(d.algo)) {
    const GridPlan g = gridOf(comm, d.algo, bytes);
    blocks = g.blocks;
    LaunchArgs a{
        d.algo,   g.blocks, g.threads, g.push_batch, g.push_eighths,        comm->knobs.pdl,
        sendbuff, recvbuff, count,     datatype,     chunkOf(comm, d.algo), comm->knobs.lean};
    a.host_sentinel = hostSentinelCall(comm, d.algo, bytes);
    TPCOMM_CHECK(launchAllReduceKernel(comm->dev, a, s));
  } else {
    return fail(tpcommUnsupported, "tpcommAllReduce: algorithm %s is not available in this build",
                tpcommAlgoName(d.algo));
  }
  record(comm, d, bytes, datatype, blocks, cap != cudaStreamCaptureStatusNone);
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
  const Decision d = choose(policyInput(comm, bytes));
  *info = tpcommCallInfo_t{};
  info->algo = d.error == tpcommSuccess ? d.algo : tpcommAlgoAuto;
  info->bytes = bytes;
  info->datatype = static_cast<int>(datatype);
  info->blocks = isKernelAlgo(d.algo) ? gridOf(comm, d.algo, bytes).blocks : 0;
  strncpy(info->reason, d.reason.c_str(), sizeof(info->reason) - 1);
  return d.error;
}
