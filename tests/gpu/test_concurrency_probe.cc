// How many kernels that wait for each other run at once: n kernels on n streams of one GPU meet at
// a counter (spin_kernel.h), as one-block grids of a warp and as grids of 4 blocks of 512 threads
// (the shape of the suite's capped grids). On the GPU every n up to 16 must meet (the suite's
// ranks sharing a GPU rely on it). Under a tool that serialises or limits concurrent kernels
// (compute-sanitizer), the largest n that meets is printed (docs/PROTOCOL.md, "Ranks sharing a
// GPU", says what the suite's sanitizer steps make of it).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "tests/gpu/harness.h"
#include "tests/gpu/spin_kernel.h"

namespace tpcomm::test {
namespace {

// Whether n waiting grids (of `blocks` x `threads`) on n streams all met within bound_ms.
bool meet(unsigned n, int blocks, int threads, unsigned bound_ms) {
  unsigned* words = nullptr;
  if (cudaMalloc(&words, 2 * sizeof(unsigned)) != cudaSuccess) return false;
  cudaMemset(words, 0, 2 * sizeof(unsigned));
  cudaDeviceSynchronize();
  std::vector<cudaStream_t> streams(n);
  for (auto& s : streams) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  const unsigned all = n * static_cast<unsigned>(blocks);
  for (auto& s : streams) launchRendezvous(words, all, words + 1, bound_ms, blocks, threads, s);
  cudaDeviceSynchronize();
  unsigned done = 0;
  cudaMemcpy(&done, words + 1, sizeof(done), cudaMemcpyDeviceToHost);
  for (auto& s : streams) cudaStreamDestroy(s);
  cudaFree(words);
  return done == all;
}

TEST(ConcurrencyProbe, WaitingKernelsOnStreamsMeet) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  // Under a sanitizer (TPCOMM_TEST_TIMEOUT_SCALE set by run_suite.sh) report, do not assert.
  const bool probe_only = getenv("TPCOMM_TEST_TIMEOUT_SCALE") != nullptr;
  for (const auto& [blocks, threads] : {std::pair{1, 32}, std::pair{4, 512}}) {
    unsigned largest = 0;
    for (unsigned n = 2; n <= 16; ++n) {
      const bool ok = meet(n, blocks, threads, probe_only ? 3000 : 1000);
      if (ok) largest = n;
      if (!probe_only) {
        EXPECT_TRUE(ok) << n << " waiting grids of " << blocks << " x " << threads
                        << " on as many streams did not meet";
      }
      if (!ok) break;
    }
    printf(
        "[ probe    ] waiting grids of %d x %d threads on separate streams that ran at once: "
        "%u of 16 tried\n",
        blocks, threads, largest);
  }
}

}  // namespace
}  // namespace tpcomm::test
