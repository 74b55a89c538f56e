// Kernel timeline tracing for latency work (build option TPCOMM_KERNEL_TRACE, off by default: a
// traced build is slower and never shipped). Thread 0 of block 0 notes %globaltimer at fixed
// points of a one-shot call into registers and stores them at the end, by rank and step epoch,
// into a per-device ring that bench/trace_oneshot.cc reads (kernels/runtime/trace.h).
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/device/wait_device.cuh"
#include "kernels/runtime/trace.h"

namespace tpcomm {

#ifdef TPCOMM_KERNEL_TRACE
// One ring per translation unit (no relocatable device code in this build): each file with
// traced kernels (oneshot.cu, oneshot_lean.cu, fused_oneshot.cu, fused_cluster.cu) exports its
// ring through readUnitTrace, and readKernelTrace (trace.cc) merges them.
static __device__ unsigned long long g_kernel_trace[kTraceRanks][kTraceCalls][kTracePoints];

struct KernelTrace {
  unsigned long long t[kTracePoints] = {};
  // A kernel's trace starts at its entry: its first statement declares it.
  __device__ __forceinline__ KernelTrace() { mark(kTraceEntry); }
  __device__ __forceinline__ void mark(int i) {
    if (threadIdx.x == 0 && blockIdx.x == 0) t[i] = globalTimerNs();
  }
  // Point i as the latest over every warp of the grid (each warp's lane 0 reaching it), straight
  // into the ring: where the slowest warp, not thread 0, sets the pace (the fused kernels' sums).
  __device__ __forceinline__ void markLatest(int i, unsigned long long epoch, int rank) {
    if (threadIdx.x % 32 == 0)
      atomicMax(&g_kernel_trace[rank % kTraceRanks][epoch % kTraceCalls][i], globalTimerNs());
  }
  // Thread 0 of block 0's points of the call (those markLatest set are left as they are).
  __device__ __forceinline__ void store(unsigned long long epoch, int rank) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
#pragma unroll
    for (int i = 0; i < kTracePoints; ++i)
      if (t[i] != 0) g_kernel_trace[rank % kTraceRanks][epoch % kTraceCalls][i] = t[i];
  }
};

// Copies this translation unit's ring on device `dev` (kTraceRanks x kTraceCalls x kTracePoints).
static inline bool readUnitTrace(int dev, unsigned long long* out) {
  return cudaSetDevice(dev) == cudaSuccess &&
         cudaMemcpyFromSymbol(out, g_kernel_trace, sizeof(g_kernel_trace)) == cudaSuccess;
}
#else
struct KernelTrace {
  __device__ __forceinline__ KernelTrace() {}
  __device__ __forceinline__ void mark(int) {}
  __device__ __forceinline__ void markLatest(int, unsigned long long, int) {}
  __device__ __forceinline__ void store(unsigned long long, int) {}
};

static inline bool readUnitTrace(int, unsigned long long*) {
  return false;
}
#endif

}  // namespace tpcomm
