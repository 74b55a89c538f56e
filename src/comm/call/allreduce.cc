// tpcommAllReduce: validate -> check the communicator is healthy -> ask the planner -> launch the
// planned variant (or hand to NCCL, counted and logged) -> record what ran.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>

#include "comm/call/call_common.h"
#include "comm/call/ce_copies.h"
#include "comm/call/local_calls.h"
#include "comm/call/nccl_fallback.h"
#include "comm/call/poison_outputs.h"
#include "comm/checks/validate.h"
#include "comm/comm.h"
#include "comm/lifecycle/registry.h"
#include "comm/node/node_collectives.h"
#include "common/error.h"
#include "kernels/runtime/algo_launch.h"
#include "plan/planner.h"

namespace tpcomm {
namespace {

void record(tpcommComm* c, const CallPlan& p, size_t bytes, tpcommDataType_t dt, bool capturing) {
  const Decision& d = p.decision;
  recordCall(c,
             CallRecord{d.algo, p.variant, d.fallback, bytes, dt,
                        isKernelVariant(p.variant) ? p.grid.blocks : 0, &d.reason, "allreduce"},
             capturing);
}

}  // namespace

tpcommResult_t localAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                              tpcommDataType_t datatype, int op, tpcommComm* comm, cudaStream_t s,
                              bool check_buffers) {
  size_t bytes = 0;
  TPCOMM_CHECK(
      validateAllReduceArgs(sendbuff, recvbuff, count, static_cast<int>(datatype), op, &bytes));
  DeviceGuard guard(comm->device);
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  TPCOMM_CHECK(checkStream(comm, s, "tpcommAllReduce", &cap));
  if (check_buffers)
    TPCOMM_CHECK(checkCallBuffers(comm, "tpcommAllReduce", cap,
                                  {{sendbuff, "sendbuff"}, {recvbuff, "recvbuff"}}));
  // A broken communicator: the error, and NaN in recvbuff (comm/call/poison_outputs.h).
  TPCOMM_CHECK(refuseIfBroken(comm, "tpcommAllReduce", s, cap,
                              {allReduceOutput(recvbuff, count, elementBytes(datatype))}));

  const CallPlan& p = plannedCall(comm, Call{bytes, aligned16(sendbuff) && aligned16(recvbuff)});
  const Decision& d = p.decision;
  if (d.error != tpcommSuccess)
    return fail(d.error, "tpcommAllReduce: %zu bytes on rank %d: %s", bytes, comm->rank,
                d.reason.c_str());
  // Before NCCL too: the order holds across tpcomm's kernels and NCCL's alike.
  TPCOMM_CHECK(orderCall(&comm->order, s, cap, "tpcommAllReduce", comm->rank));
  if (p.variant == tpcommVariantNccl) {
    TPCOMM_CHECK(ncclFallbackAllReduce(comm, sendbuff, recvbuff, count, datatype, s,
                                       cap != cudaStreamCaptureStatusNone));
  } else {
    const LaunchArgs a = launchArgsOf(p, sendbuff, recvbuff, count, datatype);
    // The copy engines' one-shot: its copies, then its kernels (comm/call/ce_copies.h).
    const bool ce = variantRow(p.variant)->transport == VariantTransport::kCopyEngine;
    TPCOMM_CHECK(ce ? launchOneShotCe(comm->dev, a, &comm->ce_steps, s)
                    : launchAllReduceKernel(comm->dev, a, s));
  }
  TPCOMM_CHECK(afterCall(&comm->order, s, cap));
  record(comm, p, bytes, datatype, cap != cudaStreamCaptureStatusNone);
  return tpcommSuccess;
}

}  // namespace tpcomm

using namespace tpcomm;

extern "C" tpcommResult_t tpcommAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                          tpcommDataType_t datatype, tpcommRedOp_t op,
                                          tpcommComm_t comm, tpcommStream_t stream) {
  TPCOMM_CHECK(checkComm(comm, "tpcommAllReduce"));
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (comm->span)
    return nodeAllReduce(sendbuff, recvbuff, count, datatype, static_cast<int>(op), comm, s);
  return localAllReduce(sendbuff, recvbuff, count, datatype, static_cast<int>(op), comm, s,
                        /*check_buffers=*/true);
}

extern "C" tpcommResult_t tpcommCommExplain(tpcommComm_t comm, size_t count,
                                            tpcommDataType_t datatype, tpcommCallInfo_t* info) {
  TPCOMM_CHECK(checkComm(comm, "tpcommCommExplain"));
  if (!info) return fail(tpcommInvalidArgument, "tpcommCommExplain: info is NULL");
  size_t bytes = 0;
  TPCOMM_CHECK(payloadBytes("tpcommCommExplain", count, static_cast<int>(datatype), &bytes));
  if (comm->span) return nodeExplain(comm, tpcommCollAllReduce, datatype, bytes, info);
  // As for 16-byte aligned buffers (what torch and the engines allocate).
  const CallPlan p = planCall(factsOf(comm), Call{bytes, true});
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
