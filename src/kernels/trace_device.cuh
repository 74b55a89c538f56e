// Kernel timeline tracing for latency work (build option TPCOMM_KERNEL_TRACE, off by default: a
// traced build is slower and never shipped). Thread 0 of block 0 notes %globaltimer at fixed
// points of a one-shot call into registers and stores them at the end, by step epoch, into a
// per-device ring that bench/trace_oneshot.cc reads (kernels/trace.h).
#pragma once

#include "kernels/trace.h"
#include "kernels/wait_device.cuh"

namespace tpcomm {

#ifdef TPCOMM_KERNEL_TRACE
// One ring per translation unit (no relocatable device code in this build): oneshot.cu, the one
// traced kernel, holds the ring readKernelTrace copies.
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
#else
struct KernelTrace {
  __device__ __forceinline__ void mark(int) {}
  __device__ __forceinline__ void store(unsigned long long) {}
};
#endif

}  // namespace tpcomm
