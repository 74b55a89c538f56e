// The per-call step epoch lives in device memory, so a call replayed from a CUDA graph uses the
// next slots rather than the ones baked in at capture. Every block reads the epoch at entry; the
// last block to do so advances it by the call's step count (the next kernel on the stream sees the
// new value: stream order, or griddepcontrol.wait under programmatic dependent launch).
#pragma once

#include "kernels/device_comm.h"

namespace tpcomm {

// Programmatic dependent launch (sm_90+): wait for the previous kernel on the stream before
// touching memory it may write, and let the next kernel start launching while this one finishes.
__device__ __forceinline__ void pdlWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdlLaunchDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Returns the call's first step epoch in every thread, or ~0ull if the communicator was aborted.
// Must be called by all threads of the block (it synchronises the block).
__device__ __forceinline__ unsigned long long beginCall(const DeviceComm& c,
                                                        unsigned long long steps) {
  __shared__ unsigned long long s_epoch;
  if (threadIdx.x == 0) {
    volatile RankState* st = c.state;
    unsigned long long e = st->epoch;
    if (st->abort != 0u) e = ~0ull;
    __threadfence();  // the epoch read is complete before this block counts itself in
    const unsigned int arrived = atomicAdd(&c.state->arrive, 1u);
    if (arrived == gridDim.x - 1) {
      // Every block has read the epoch: advance it for the next call.
      c.state->arrive = 0u;
      if (e != ~0ull) st->epoch = e + steps;
      __threadfence();
    }
    s_epoch = e;
  }
  __syncthreads();
  return s_epoch;
}

}  // namespace tpcomm
