// Kernel timeline tracing for latency work (build option TPCOMM_KERNEL_TRACE, off by default: a
// traced build is slower and never shipped). Thread 0 of block 0 notes %globaltimer at fixed
// points of a one-shot call into registers and stores them at the end, by step epoch, into a
// per-device ring that bench/trace_oneshot.cc reads (kernels/trace.h).
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/trace.h"
#include "kernels/wait_device.cuh"

namespace tpcomm {

#ifdef TPCOMM_KERNEL_TRACE
// One ring per translation unit (no relocatable device code in this build): each file with
// traced kernels (oneshot.cu, oneshot_lean.cu, fused_oneshot.cu, fused_cluster.cu) exports its
// ring through readUnitTrace, and readKernelTrace (trace.cc) merges them.
static __device__ unsigned long long g_kernel_trace[kTraceCalls][kTracePoints];

struct KernelTrace {
  unsigned long long t[kTracePoints] = {};
  __device__ __forceinline__ void mark(int i) {
    if (threadIdx.x == 0 && blockIdx.x == 0) t[i] = globalTimerNs();
  }
  __device__ __forceinline__ void store(unsigned long long epoch) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
#pragma unroll
    for (int i = 0; i < kTracePoints; ++i) g_kernel_trace[epoch % kTraceCalls][i] = t[i];
  }
};

// Copies this translation unit's ring on device `dev`.
static inline bool readUnitTrace(int dev, unsigned long long* out) {
  return cudaSetDevice(dev) == cudaSuccess &&
         cudaMemcpyFromSymbol(out, g_kernel_trace, sizeof(g_kernel_trace)) == cudaSuccess;
}
#else
struct KernelTrace {
  __device__ __forceinline__ void mark(int) {}
  __device__ __forceinline__ void store(unsigned long long) {}
};

static inline bool readUnitTrace(int, unsigned long long*) {
  return false;
}
#endif

}  // namespace tpcomm
