// The per-call step epoch lives in device memory, so a call replayed from a CUDA graph uses the
// next slots rather than the ones baked in at capture. Every block reads the epoch at entry; the
// last block to do so advances it by the call's step count (the next kernel on the stream sees the
// new value: stream order, or griddepcontrol.wait under programmatic dependent launch). Kernels
// use these primitives through their call's session (session_device.cuh), which calls them in
// the order argued here.
#pragma once

#include <cstddef>

#include "kernels/layout/device_comm.h"
#include "tpcomm/tpcomm.h"

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
// Must be called by all threads of the block (it synchronises the block). One acquire load: the
// bookkeeping that advances the epoch runs later (arriveEpoch after the pushes, advanceEpoch at the
// kernel's end), off the path between a call's start and its data reaching the peers.
__device__ __forceinline__ unsigned long long readEpoch(RankState* st) {
  __shared__ unsigned long long s_epoch;
  if (threadIdx.x == 0) {
    unsigned long long e;
    // The abort flag is loaded first so that both loads are in flight together: after the
    // acquire below, a load would wait for the epoch (one more L2 round trip before the pushes).
    const unsigned aborted = *reinterpret_cast<volatile unsigned int*>(&st->abort);
    // Acquire: this block's later atomicAdd on `arrive` cannot be performed before this read, so
    // the last block's advance (after all arrivals) can never be seen here.
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(e) : "l"(&st->epoch) : "memory");
    s_epoch = aborted != 0u ? ~0ull : e;
  }
  __syncthreads();
  return s_epoch;
}
__device__ __forceinline__ unsigned long long readEpoch(const DeviceComm& c) {
  return readEpoch(c.state);
}

// The same read without the block barrier, for kernels whose threads each compute their slot
// (the lean one-shot): every thread loads the epoch and the abort word itself, with one 16-byte
// relaxed load of RankState's first half (epoch, then arrive and abort), so the block never waits
// on thread 0's load, a shared-memory round trip and a barrier before its first push. Returns ~0ull
// in a thread that saw the communicator aborted.
// The caller must synchronise the block (__syncthreads) between these reads and arriveEpoch:
// readEpoch's acquire and barrier are what kept this block's arrival from being counted before
// all of its reads returned (the last block's advance must never be seen here). Relaxed loads
// whose values every thread has used before the barrier give the same order.
__device__ __forceinline__ unsigned long long readEpochThread(const RankState* st) {
  static_assert(offsetof(RankState, epoch) == 0 && offsetof(RankState, abort) == 12,
                "readEpochThread loads epoch and abort as one 16-byte vector");
  unsigned long long epoch, arrive_abort;  // abort is the high half of the second word
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];"
               : "=l"(epoch), "=l"(arrive_abort)
               : "l"(st)
               : "memory");
  return (arrive_abort >> 32) != 0u ? ~0ull : epoch;
}

// Two kernels of one communicator running at once (graphs replayed concurrently on two streams:
// the host orders every other mix, comm/call/stream_order.h) read the same epoch and fill the same
// slots. Like a timeout: the communicator is aborted, and the host reads tpcommInvalidUsage.
static __device__ __forceinline__ void reportConcurrentCalls(const DeviceComm& c) {
  atomicExch(&c.state->abort, 1u);
  c.host_error->concurrent = 1;
  if (atomicCAS(const_cast<int*>(&c.host_error->code), 0, static_cast<int>(tpcommInvalidUsage)) ==
      0)
    c.host_error->peer = c.rank;
  __threadfence_system();
}

// Counts the block in (thread 0, relaxed atomic, no fence: it must not wait for the block's remote
// stores). True in the thread of the last block to arrive, which later calls advanceEpoch.
// The count is reset by a kernel's last block to arrive, at its end, and the next kernel on the
// stream arrives only after that one completed, so a count of gridDim.x or more means another
// kernel's blocks arrived too. A best-effort net: it sees two kernels whose arrivals all come
// before either resets (as when both wait for a peer), and a one-block kernel counts nothing (its
// path stays as lean as it is), so neither sees the other there.
__device__ __forceinline__ bool arriveEpoch(const DeviceComm& c) {
  if (threadIdx.x != 0) return false;
  if (gridDim.x == 1) return true;
  const unsigned n = atomicAdd(&c.state->arrive, 1u);
  if (n >= gridDim.x) reportConcurrentCalls(c);
  return n == gridDim.x - 1;
}

// Called at the end of the kernel by the thread arriveEpoch chose: every block has read the epoch.
// No fence before the stores: a fence here would wait for this thread's outstanding writes, its
// pushes to the peers among them, on every multi-block call (docs/BENCHMARKS.md). The order it
// would give holds without it: every block's read of the epoch is an acquire, so its arrival is
// performed after the read; this thread's stores are issued only once its own arrival returned the
// final count (they depend on the value, and GPUs do not perform stores speculatively), so after
// every read; and the next kernel reads the new values only after this grid completed (stream order
// or griddepcontrol.wait).
__device__ __forceinline__ void advanceEpoch(const DeviceComm& c, unsigned long long epoch,
                                             unsigned long long steps) {
  volatile RankState* st = c.state;
  if (gridDim.x > 1) st->arrive = 0u;
  st->epoch = epoch + steps;
}

}  // namespace tpcomm
