// Inputs that change with every graph replay, and their check on the GPU: a device counter that
// the graph itself advances, fp32 inputs that are small integers derived from it (so every sum is
// exact in any order), and a comparison with the expected sum. A replay whose all-reduce read a
// peer's data of another replay shows up as a mismatch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace tpcomm::test {

// in[i] = (counter + 3 * rank + i) % 61 as fp32.
void launchStamp(float* in, size_t n, const unsigned* counter, int rank, cudaStream_t stream);
// *bad += elements of out that differ from the sum over every rank of its stamped input.
void launchCheckSum(const float* out, size_t n, const unsigned* counter, int world,
                    unsigned long long* bad, cudaStream_t stream);
// ++*counter.
void launchBump(unsigned* counter, cudaStream_t stream);

}  // namespace tpcomm::test
