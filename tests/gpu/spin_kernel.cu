#include "tests/gpu/spin_kernel.h"

namespace tpcomm::test {
namespace {

__device__ unsigned long long nowNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spinUntilFlag(const volatile int* flag, unsigned long long bound_ns) {
  const unsigned long long end = nowNs() + bound_ns;
  while (*flag == 0 && nowNs() < end) __nanosleep(1000);
}

__global__ void spinFor(unsigned long long ns) {
  const unsigned long long end = nowNs() + ns;
  while (nowNs() < end) __nanosleep(500);
}

__global__ void rendezvous(unsigned* counter, unsigned n, unsigned* done,
                           unsigned long long bound_ns) {
  if (threadIdx.x == 0) {  // the other warps wait at the barrier: the whole block stays resident
    atomicAdd(counter, 1u);
    const unsigned long long end = nowNs() + bound_ns;
    while (atomicAdd(counter, 0u) < n && nowNs() < end) __nanosleep(1000);
    if (atomicAdd(counter, 0u) >= n) atomicAdd(done, 1u);
  }
  __syncthreads();
}

}  // namespace

void launchRendezvous(unsigned* counter, unsigned n, unsigned* done, unsigned bound_ms, int blocks,
                      int threads, cudaStream_t stream) {
  rendezvous<<<blocks, threads, 0, stream>>>(counter, n, done, bound_ms * 1000000ull);
}

void launchSpinUntilFlag(const volatile int* flag, unsigned bound_ms, cudaStream_t stream) {
  spinUntilFlag<<<1, 1, 0, stream>>>(flag, bound_ms * 1000000ull);
}

void launchSpinFor(unsigned ns, cudaStream_t stream) {
  spinFor<<<1, 1, 0, stream>>>(ns);
}

}  // namespace tpcomm::test
