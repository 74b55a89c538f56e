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
// Must be called by all threads of the block (it synchronises the block). Cheap on purpose: one
// load; the bookkeeping that advances the epoch (endEpoch) runs after the pushes, off the path
// between a call's start and its data reaching the peers.
__device__ __forceinline__ unsigned long long readEpoch(const DeviceComm& c) {
  __shared__ unsigned long long s_epoch;
  if (threadIdx.x == 0) {
    volatile RankState* st = c.state;
    unsigned long long e = st->epoch;
    if (st->abort != 0u) e = ~0ull;
    s_epoch = e;
  }
  __syncthreads();
  return s_epoch;
}

// Advances the epoch by `steps` once every block has read it: thread 0 of each block counts
// itself in after its read (program order plus a fence), and the last one writes. A one-block
// grid needs no counter.
__device__ __forceinline__ void endEpoch(const DeviceComm& c, unsigned long long epoch,
                                         unsigned long long steps) {
  if (threadIdx.x != 0 || epoch == ~0ull) return;
  volatile RankState* st = c.state;
  if (gridDim.x == 1) {
    st->epoch = epoch + steps;
    return;
  }
  __threadfence();
  const unsigned int arrived = atomicAdd(&c.state->arrive, 1u);
  if (arrived == gridDim.x - 1) {
    st->arrive = 0u;
    st->epoch = epoch + steps;
  }
}

}  // namespace tpcomm
