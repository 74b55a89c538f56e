// Bounded waits. Every spin on a peer's data gives up once that wait has seen no progress for the
// communicator's timeout (read from %globaltimer); a peer that never arrives turns into
// tpcommTimeout in the communicator's mapped error word and an abort flag that makes later kernels
// return at once. The kernel itself always exits normally (no __trap: the CUDA context must
// survive so the host can read the error and tear down cleanly).
//
// The deadline is per wait, not per call, so a long call that keeps moving (64 MiB over host
// memory, a peer that starts late after its GEMMs and then streams) never times out. Each wait
// loop starts its own `spins` at 0; keepWaiting looks at the clock only every 256 spins, and the
// first look of a wait (spins == 256) starts that wait's deadline. A wait satisfied within 256
// spins therefore never reads the clock, and nothing is read at the kernel's start. Where one loop
// waits for several entries at once (every source of a vector, a run of entries), progress is the
// whole wait finishing.
#pragma once

#include "kernels/device/vec_device.cuh"
#include "kernels/layout/device_comm.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

__device__ __forceinline__ unsigned long long globalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// What one thread knows about its waits: when the current one must give up (set at its first
// check), and whether the thread has given up (then every later wait returns at once).
struct WaitCtx {
  unsigned long long deadline;
  bool failed;
};

__device__ __forceinline__ WaitCtx makeWaitCtx(const DeviceComm& /*c*/) {
  return WaitCtx{0ull, false};
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

// Called in a spin loop, `spins` starting at 0 for each wait: every 256 spins checks the abort
// flag and this wait's deadline (started at its first check). Returns false (and marks ctx
// failed, reporting a timeout naming `peer`) when the thread must stop waiting.
__device__ __forceinline__ bool keepWaiting(WaitCtx& ctx, unsigned& spins, const DeviceComm& c,
                                            int peer, unsigned long long step) {
  if ((++spins & 255u) != 0) return true;
  if (*reinterpret_cast<volatile unsigned int*>(&c.state->abort) != 0u) {
    ctx.failed = true;
    return false;
  }
  const unsigned long long now = globalTimerNs();
  if (spins == 256u) {
    ctx.deadline = now + c.timeout_ns;
  } else {
    // Held below 2^32 so that a wait longer than 2^32 spins never looks like a first check again.
    spins = 512u;
    if (now > ctx.deadline) {
      reportTimeout(c, peer, step);
      ctx.failed = true;
    }
  }
  return !ctx.failed;
}

}  // namespace tpcomm
