// What every collective's entry point does around its plan: the communicator's health, its facts
// for the planner, the stream's device, the current device while launching, and the record of
// what ran (stats, last call, the fallback log line). tpcommAllReduce (allreduce.cc) and
// tpcommAllReduceAddRmsNorm (fused_allreduce.cc) share them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "comm/comm.h"
#include "plan/planner.h"

namespace tpcomm {

// A buffer the 16-byte vector paths can take whole (the lean and fused kernels need it).
inline bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % kVecBytes == 0;
}

// An error a kernel left in the mapped word (a peer that never answered), or an NCCL-served call
// that never finished (comm/lifecycle/nccl_watchdog.h), poisons the communicator.
tpcommResult_t checkAsync(const tpcommComm* c, const char* op);

// The facts of the communicator's ranks on this machine (what its local calls and a spanning
// communicator's legs are planned with), and those of the whole communicator: with its machines
// (CommFacts::nodes) where it spans them.
CommFacts factsOf(const tpcommComm* c);
CommFacts spanFactsOf(const tpcommComm* c);

// The launch of a planned kernel call (the plan's grid, threads as launched, geometry) on these
// buffers.
LaunchArgs launchArgsOf(const CallPlan& p, const void* send, void* recv, size_t count,
                        tpcommDataType_t dt);

// The plan of `call` (comm->plans: made once per repeated call). spanning: the call of a
// communicator spanning machines, planned as legs (planCall's node rules).
const CallPlan& plannedCall(tpcommComm* c, const Call& call, bool spanning = false);

// The stream must be on the communicator's GPU, capturing or not (comm/checks/stream_device.h: a
// stream of another GPU is refused before the launch could invalidate the caller's capture). *cap:
// whether it is capturing a graph.
tpcommResult_t checkStream(const tpcommComm* c, cudaStream_t s, const char* op,
                           cudaStreamCaptureStatus* cap);

// The call's buffers are memory the communicator's GPU may use (comm/checks/buffer_check.h); cap as
// checkStream gave it. Optional buffers are passed as nullptr and skipped.
tpcommResult_t checkCallBuffers(tpcommComm* c, const char* op, cudaStreamCaptureStatus cap,
                                std::initializer_list<BufferArg> bufs);

// Counts and remembers one call: its algorithm (stats.calls), variant, bytes, the grid, and why.
struct CallRecord {
  int algo;
  tpcommVariant_t variant;
  bool fallback;
  size_t bytes;
  tpcommDataType_t dtype;
  int blocks;
  const std::string* reason;
  const char* op;  // for the debug line
  // The epilogue kernel after an all-reduce that recorded itself: counted as its variant and
  // remembered as the last call, not counted again in stats.calls, bytes or fallbacks.
  bool epilogue = false;
};
void recordCall(tpcommComm* c, const CallRecord& r, bool capturing);

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

}  // namespace tpcomm
