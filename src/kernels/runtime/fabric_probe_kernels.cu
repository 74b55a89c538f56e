#include "kernels/device/wait_device.cuh"
#include "kernels/runtime/fabric_probe_kernels.h"

namespace tpcomm {
namespace topo {
namespace {

// Plain 16-byte stores of a constant: what a push kernel's data stores look like on the link.
__global__ void __launch_bounds__(kProbeThreads) probeStores(ProbeTargets t) {
  int4* dst = static_cast<int4*>(t.ptr[blockIdx.y]);
  const size_t n = t.bytes / sizeof(int4);
  const int4 v = make_int4(static_cast<int>(blockIdx.x), 1, 2, 3);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = v;
}

// 16-byte loads, folded with xor into one word per thread: what a pull kernel's reads look like.
__global__ void __launch_bounds__(kProbeThreads) probeLoads(ProbeTargets t, int4* sink) {
  // Cache-global loads (__ldcg): no L1 hit can stand in for a crossing of the link.
  const int4* src = static_cast<const int4*>(t.ptr[blockIdx.y]);
  const size_t n = t.bytes / sizeof(int4);
  int4 acc = make_int4(0, 0, 0, 0);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int4 v = __ldcg(src + i);
    acc.x ^= v.x;
    acc.y ^= v.y;
    acc.z ^= v.z;
    acc.w ^= v.w;
  }
  sink[(blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x] = acc;
}

__global__ void probePing(volatile unsigned* mine, volatile unsigned* theirs, int rounds,
                          bool starter, unsigned long long timeout_ns,
                          unsigned long long* result_ns) {
  const unsigned long long start = globalTimerNs();
  const unsigned long long deadline = start + timeout_ns;
  bool late = false;
  for (unsigned i = 1; i <= static_cast<unsigned>(rounds) && !late; ++i) {
    if (starter) *theirs = i;
    while (*mine != i && !late) late = globalTimerNs() > deadline;
    if (!starter && !late) *theirs = i;
  }
  if (starter) *result_ns = late ? 0ull : globalTimerNs() - start;
}

}  // namespace

std::vector<const void*> probeKernels() {
  return {reinterpret_cast<const void*>(probeStores), reinterpret_cast<const void*>(probeLoads),
          reinterpret_cast<const void*>(probePing)};
}

cudaError_t launchProbeStores(const ProbeTargets& t, int blocks, cudaStream_t s) {
  probeStores<<<dim3(blocks, t.count), kProbeThreads, 0, s>>>(t);
  return cudaGetLastError();
}

cudaError_t launchProbeLoads(const ProbeTargets& t, int blocks, void* sink, cudaStream_t s) {
  probeLoads<<<dim3(blocks, t.count), kProbeThreads, 0, s>>>(t, static_cast<int4*>(sink));
  return cudaGetLastError();
}

cudaError_t launchProbePing(unsigned* mine, unsigned* theirs, int rounds, bool starter,
                            unsigned long long timeout_ns, unsigned long long* result_ns,
                            cudaStream_t s) {
  probePing<<<1, 1, 0, s>>>(mine, theirs, rounds, starter, timeout_ns, result_ns);
  return cudaGetLastError();
}

}  // namespace topo
}  // namespace tpcomm
