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

}  // namespace

void launchSpinUntilFlag(const volatile int* flag, unsigned bound_ms, cudaStream_t stream) {
  spinUntilFlag<<<1, 1, 0, stream>>>(flag, bound_ms * 1000000ull);
}

}  // namespace tpcomm::test
