#include "tests/gpu/check_kernel.h"

namespace tpcomm::test {
namespace {

__global__ void compareKernel(const unsigned char* a, const unsigned char* b, size_t bytes,
                              unsigned long long* mismatches) {
  unsigned long long bad = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < bytes; i += gridDim.x * blockDim.x)
    bad += a[i] != b[i];
  if (bad) atomicAdd(mismatches, bad);
}

}  // namespace

void launchCompare(const void* a, const void* b, size_t bytes, unsigned long long* mismatches,
                   cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>(bytes / 4096 + 1 > 64 ? 64 : bytes / 4096 + 1);
  compareKernel<<<blocks, 256, 0, stream>>>(static_cast<const unsigned char*>(a),
                                            static_cast<const unsigned char*>(b), bytes,
                                            mismatches);
}

}  // namespace tpcomm::test
