// Bounded waits. Every spin on a peer's data has a deadline read from %globaltimer; a peer that
// never arrives turns into tpcommTimeout in the communicator's mapped error word and an abort flag
// that makes later kernels return at once. The kernel itself always exits normally (no __trap: the
// CUDA context must survive so the host can read the error and tear down cleanly).
#pragma once

#include "kernels/device_comm.h"
#include "kernels/vec_device.cuh"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

__device__ __forceinline__ unsigned long long globalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// What one thread knows about the call it is running: when it must give up, and whether it has.
struct WaitCtx {
  unsigned long long deadline;
  bool failed;
};

__device__ __forceinline__ WaitCtx makeWaitCtx(const DeviceComm& c) {
  return WaitCtx{globalTimerNs() + c.timeout_ns, false};
}

static __device__ __noinline__ void reportTimeout(const DeviceComm& c, int peer,
                                                  unsigned long long step) {
  atomicExch(&c.state->abort, 1u);
  // Only the first reporter's details are kept.
  if (atomicCAS(const_cast<int*>(&c.host_error->code), 0, static_cast<int>(tpcommTimeout)) == 0) {
    c.host_error->peer = peer;
    c.host_error->step = static_cast<int>(step);
  }
  __threadfence_system();
}

// Called in a spin loop: every 256 spins checks the abort flag and the deadline. Returns false
// (and marks ctx failed, reporting a timeout naming `peer`) when the thread must stop waiting.
__device__ __forceinline__ bool keepWaiting(WaitCtx& ctx, unsigned& spins, const DeviceComm& c,
                                            int peer, unsigned long long step) {
  if ((++spins & 255u) != 0) return true;
  if (*reinterpret_cast<volatile unsigned int*>(&c.state->abort) != 0u) {
    ctx.failed = true;
  } else if (globalTimerNs() > ctx.deadline) {
    reportTimeout(c, peer, step);
    ctx.failed = true;
  }
  return !ctx.failed;
}

}  // namespace tpcomm
