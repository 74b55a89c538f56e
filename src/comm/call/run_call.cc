#include "comm/call/run_call.h"

#include <string>

#include "comm/call/stream_order.h"
#include "common/error.h"

namespace tpcomm {

tpcommResult_t runCallWith(tpcommComm* comm, cudaStream_t s, const CallSteps& st,
                           CallLaunch& launch) {
  DeviceGuard guard(comm->device);
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  TPCOMM_CHECK(checkStream(comm, s, st.op, &cap));
  if (st.nothing) return checkAsync(comm, st.op);  // nothing to launch, record or poison
  if (st.check_buffers) TPCOMM_CHECK(checkCallBuffers(comm, st.op, cap, st.buffers));
  const bool capturing = cap != cudaStreamCaptureStatusNone;
  // A broken communicator is not planned for: its outputs get the poison below, then its error.
  const tpcommResult_t broken = checkAsync(comm, st.op);
  const std::string why = broken == tpcommSuccess ? std::string() : lastError();
  const CallPlan* p = nullptr;
  if (broken == tpcommSuccess) {
    p = &plannedCall(comm, st.call, st.spanning);
    if (p->decision.error != tpcommSuccess)
      return fail(p->decision.error, "%s: %zu bytes on rank %d: %s", st.op, st.bytes, comm->rank,
                  p->decision.reason.c_str());
  }
  // Behind the communicator's earlier calls, whatever their stream (NCCL's legs too), whose
  // kernels may still be writing these outputs.
  const tpcommResult_t ordered = orderCall(&comm->order, s, cap, st.op, comm->rank);
  if (ordered != tpcommSuccess && broken == tpcommSuccess) return ordered;
  CallRecord rec{};
  tpcommResult_t r = broken;
  if (ordered == tpcommSuccess) {
    if (broken == tpcommSuccess) {
      r = launch.launch(*p, s, capturing, &rec);
    } else if (!fillPoison(st.outputs, s)) {
      cudaGetLastError();  // reported below as the communicator's error, not this
    }
    // The order's mark: after a launch that failed there is nothing to wait for.
    if (r == tpcommSuccess || broken != tpcommSuccess) {
      const tpcommResult_t after = afterCall(&comm->order, s, cap);
      if (r == tpcommSuccess) r = after;
    }
  }
  if (broken != tpcommSuccess) {
    setLastError(why);
    return broken;
  }
  if (r != tpcommSuccess) return r;
  if (!st.records_itself) recordCall(comm, rec, capturing);
  return tpcommSuccess;
}

}  // namespace tpcomm
