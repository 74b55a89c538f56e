// tpcommAllReduce: validate, then the call's pipeline (run_call.h) around the launch of the
// planned variant (or the hand-off to NCCL, counted and logged).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>

#include "comm/call/call_common.h"
#include "comm/call/ce_copies.h"
#include "comm/call/local_calls.h"
#include "comm/call/nccl_fallback.h"
#include "comm/call/poison_outputs.h"
#include "comm/call/run_call.h"
#include "comm/checks/validate.h"
#include "comm/comm.h"
#include "comm/lifecycle/registry.h"
#include "comm/node/node_collectives.h"
#include "common/error.h"
#include "kernels/runtime/algo_launch.h"
#include "plan/planner.h"

namespace tpcomm {
namespace {

CallRecord record(const CallPlan& p, size_t bytes, tpcommDataType_t dt) {
  const Decision& d = p.decision;
  return CallRecord{d.algo,    p.variant,  d.fallback,
                    bytes,     dt,         isKernelVariant(p.variant) ? p.grid.blocks : 0,
                    &d.reason, "allreduce"};
}

}  // namespace

tpcommResult_t localAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                              tpcommDataType_t datatype, int op, tpcommComm* comm, cudaStream_t s,
                              bool check_buffers, int wire) {
  size_t bytes = 0;
  TPCOMM_CHECK(
      validateAllReduceArgs(sendbuff, recvbuff, count, static_cast<int>(datatype), op, &bytes));
  Call call = allReduceCall(bytes, aligned16(sendbuff) && aligned16(recvbuff), datatype);
  call.wire = wire;
  const CallSteps steps{wire < 0 ? "tpcommAllReduce" : "tpcommAllReduceWire",
                        call,
                        bytes,
                        {{sendbuff, "sendbuff"}, {recvbuff, "recvbuff"}},
                        {allReduceOutput(recvbuff, count, elementBytes(datatype))},
                        check_buffers};
  return runCall(
      comm, s, steps, [&](const CallPlan& p, cudaStream_t st, bool capturing, CallRecord* rec) {
        *rec = record(p, bytes, datatype);
        if (isNcclVariant(p.variant))
          return ncclFallbackAllReduce(comm, sendbuff, recvbuff, count, datatype, st, capturing);
        const LaunchArgs a = launchArgsOf(p, sendbuff, recvbuff, count, datatype);
        // The copy engines' one-shot: its copies, then its kernels (ce_copies.h).
        const bool ce = variantRow(p.variant)->transport == VariantTransport::kCopyEngine;
        return ce ? launchOneShotCe(comm->dev, a, &comm->ce_steps, st)
                  : launchAllReduceKernel(comm->dev, a, st);
      });
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

extern "C" tpcommResult_t tpcommAllReduceWire(const void* sendbuff, void* recvbuff, size_t count,
                                              tpcommDataType_t datatype, tpcommRedOp_t op, int wire,
                                              tpcommComm_t comm, tpcommStream_t stream) {
  TPCOMM_CHECK(checkComm(comm, "tpcommAllReduceWire"));
  if (wire != -1 && !wireCodecName(wire))  // the codecs the wire knob knows (plan/knobs.h)
    return fail(tpcommInvalidArgument,
                "tpcommAllReduceWire: wire %d is none of -1 (the communicator's), 0 (none), "
                "1 int8, 2 int4, 3 fp8, 4 fp8_e5m2",
                wire);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (comm->span) {
    if (wire > 0)
      return fail(tpcommUnsupported,
                  "tpcommAllReduceWire: wire=%s on a communicator spanning machines (no codec "
                  "runs across machines; pass -1 or 0)",
                  wireCodecName(wire));
    return nodeAllReduce(sendbuff, recvbuff, count, datatype, static_cast<int>(op), comm, s);
  }
  return localAllReduce(sendbuff, recvbuff, count, datatype, static_cast<int>(op), comm, s,
                        /*check_buffers=*/true, wire);
}

extern "C" tpcommResult_t tpcommCommExplain(tpcommComm_t comm, size_t count,
                                            tpcommDataType_t datatype, tpcommCallInfo_t* info) {
  TPCOMM_CHECK(checkComm(comm, "tpcommCommExplain"));
  if (!info) return fail(tpcommInvalidArgument, "tpcommCommExplain: info is NULL");
  size_t bytes = 0;
  TPCOMM_CHECK(payloadBytes("tpcommCommExplain", count, static_cast<int>(datatype), &bytes));
  if (comm->span) return nodeExplain(comm, tpcommCollAllReduce, datatype, bytes, info);
  // As for 16-byte aligned buffers (what torch and the engines allocate).
  const CallPlan p = planCall(factsOf(comm), allReduceCall(bytes, true, datatype));
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
