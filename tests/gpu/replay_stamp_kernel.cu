#include "tests/gpu/replay_stamp_kernel.h"

namespace tpcomm::test {
namespace {

__device__ float stamp(unsigned counter, int rank, size_t i) {
  return static_cast<float>((counter + 3u * static_cast<unsigned>(rank) + i) % 61u);
}

__global__ void stampKernel(float* in, size_t n, const unsigned* counter, int rank) {
  const unsigned k = *counter;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    in[i] = stamp(k, rank, i);
}

__global__ void checkSumKernel(const float* out, size_t n, const unsigned* counter, int world,
                               unsigned long long* bad) {
  const unsigned k = *counter;
  unsigned long long wrong = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float want = 0.0f;
    for (int r = 0; r < world; ++r) want += stamp(k, r, i);
    wrong += out[i] != want;
  }
  if (wrong) atomicAdd(bad, wrong);
}

__global__ void bumpKernel(unsigned* counter) {
  ++*counter;
}

unsigned blocksFor(size_t n) {
  return static_cast<unsigned>(n / 2048 + 1 > 128 ? 128 : n / 2048 + 1);
}

}  // namespace

void launchStamp(float* in, size_t n, const unsigned* counter, int rank, cudaStream_t stream) {
  stampKernel<<<blocksFor(n), 256, 0, stream>>>(in, n, counter, rank);
}

void launchCheckSum(const float* out, size_t n, const unsigned* counter, int world,
                    unsigned long long* bad, cudaStream_t stream) {
  checkSumKernel<<<blocksFor(n), 256, 0, stream>>>(out, n, counter, world, bad);
}

void launchBump(unsigned* counter, cudaStream_t stream) {
  bumpKernel<<<1, 1, 0, stream>>>(counter);
}

}  // namespace tpcomm::test
