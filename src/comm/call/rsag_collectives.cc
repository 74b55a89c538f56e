// tpcommReduceScatter and tpcommAllGather: the all-reduce's path (allreduce.cc) for the halves of
// the two-shot: validate, then the call's pipeline (run_call.h) around the launch of the planned
// half (plan/rsag_plan.h; or the hand-off to NCCL, counted and logged).
#include <cuda_runtime_api.h>

#include <cstring>

#include "comm/call/call_common.h"
#include "comm/call/local_calls.h"
#include "comm/call/nccl_fallback.h"
#include "comm/call/poison_outputs.h"
#include "comm/call/run_call.h"
#include "comm/checks/validate.h"
#include "comm/checks/validate_rsag.h"
#include "comm/comm.h"
#include "comm/lifecycle/registry.h"
#include "comm/node/node_collectives.h"
#include "common/error.h"
#include "kernels/runtime/algo_launch.h"
#include "plan/planner.h"

namespace tpcomm {
namespace {

// The kernels take whole vectors of every rank's run where the buffers and the run length are
// 16-byte aligned; else they move elements one by one at the edges (vec_device.cuh).
bool rsagAligned(const void* send, const void* recv, size_t bytes, int world) {
  return aligned16(send) && aligned16(recv) &&
         (bytes / static_cast<size_t>(world)) % kVecBytes == 0;
}

}  // namespace

tpcommResult_t localRsag(tpcommColl_t coll, const void* send, void* recv, size_t count,
                         tpcommDataType_t dt, tpcommComm* comm, cudaStream_t s,
                         bool check_buffers) {
  const char* op = collOpName(coll);
  size_t bytes = 0;
  TPCOMM_CHECK(validateRsagArgs(coll, send, recv, count, static_cast<int>(dt), comm->rank,
                                comm->world, &bytes));
  const CallSteps steps{op,
                        Call{bytes, rsagAligned(send, recv, bytes, comm->world), coll},
                        bytes,
                        {{send, "sendbuff"}, {recv, "recvbuff"}},
                        {rsagOutput(coll, recv, count, elementBytes(dt), comm->world)},
                        check_buffers,
                        /*nothing=*/count == 0};
  return runCall(
      comm, s, steps, [&](const CallPlan& p, cudaStream_t st, bool capturing, CallRecord* rec) {
        const Decision& d = p.decision;
        *rec = CallRecord{
            d.algo,     p.variant,
            d.fallback, bytes,
            dt,         isKernelVariant(p.variant) ? p.grid.blocks : 0,
            &d.reason,  coll == tpcommCollReduceScatter ? "reduce-scatter" : "all-gather"};
        if (isNcclVariant(p.variant))
          return ncclFallbackRsag(comm, coll, send, recv, count, dt, st, capturing);
        return launchAllReduceKernel(comm->dev, launchArgsOf(p, send, recv, count, dt), st);
      });
}

namespace {

tpcommResult_t runRsag(tpcommColl_t coll, const void* send, void* recv, size_t count,
                       tpcommDataType_t dt, tpcommComm_t comm, tpcommStream_t stream) {
  TPCOMM_CHECK(checkComm(comm, collOpName(coll)));
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (comm->span) return nodeRsag(coll, send, recv, count, dt, comm, s);
  return localRsag(coll, send, recv, count, dt, comm, s, /*check_buffers=*/true);
}

}  // namespace
}  // namespace tpcomm

using namespace tpcomm;

extern "C" tpcommResult_t tpcommReduceScatter(const void* sendbuff, void* recvbuff,
                                              size_t recvcount, tpcommDataType_t datatype,
                                              tpcommComm_t comm, tpcommStream_t stream) {
  return runRsag(tpcommCollReduceScatter, sendbuff, recvbuff, recvcount, datatype, comm, stream);
}

extern "C" tpcommResult_t tpcommAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                          tpcommDataType_t datatype, tpcommComm_t comm,
                                          tpcommStream_t stream) {
  return runRsag(tpcommCollAllGather, sendbuff, recvbuff, sendcount, datatype, comm, stream);
}

extern "C" tpcommResult_t tpcommCommExplainCollective(tpcommComm_t comm, tpcommColl_t collective,
                                                      size_t count, tpcommDataType_t datatype,
                                                      tpcommCallInfo_t* info) {
  const char* op = "tpcommCommExplainCollective";
  TPCOMM_CHECK(checkComm(comm, op));
  if (!info) return fail(tpcommInvalidArgument, "%s: info is NULL", op);
  if (collective == tpcommCollAllReduce) return tpcommCommExplain(comm, count, datatype, info);
  if (collective != tpcommCollReduceScatter && collective != tpcommCollAllGather)
    return fail(tpcommInvalidArgument,
                "%s: collective %d is not a tpcommColl_t (tpcommCollAllReduce=%d, "
                "tpcommCollReduceScatter=%d, tpcommCollAllGather=%d)",
                op, static_cast<int>(collective), tpcommCollAllReduce, tpcommCollReduceScatter,
                tpcommCollAllGather);
  size_t part = 0;
  TPCOMM_CHECK(payloadBytes(op, count, static_cast<int>(datatype), &part));
  const int world = comm->span ? comm->span->global_world : comm->world;
  if (part > SIZE_MAX / static_cast<size_t>(world))
    return fail(tpcommInvalidArgument, "%s: count %zu x world %d overflows the byte size", op,
                count, world);
  const size_t bytes = part * static_cast<size_t>(world);
  if (comm->span && count > 0) return nodeExplain(comm, collective, datatype, bytes, info);
  *info = tpcommCallInfo_t{};
  info->bytes = bytes;
  info->datatype = static_cast<int>(datatype);
  if (count == 0) {
    strncpy(info->reason, "count 0: nothing moves, nothing is launched", sizeof(info->reason) - 1);
    return tpcommSuccess;
  }
  // As for 16-byte aligned buffers and runs (what torch and the engines allocate).
  const CallPlan p = planCall(factsOf(comm), Call{bytes, true, collective});
  const Decision& d = p.decision;
  info->algo = d.error == tpcommSuccess ? d.algo : tpcommAlgoAuto;
  info->variant = p.variant;
  info->blocks = isKernelVariant(p.variant) ? p.grid.blocks : 0;
  strncpy(info->reason, d.reason.c_str(), sizeof(info->reason) - 1);
  return d.error;
}
