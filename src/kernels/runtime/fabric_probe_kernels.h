// The fabric probe's kernels (fabric_probe_kernels.cu), launched by fabric_probe_run.cc. Each
// moves a fixed number of bytes and ends; the ping-pong kernels stop at their own deadline.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

namespace tpcomm {
namespace topo {

constexpr int kProbeMaxTargets = 8;
constexpr int kProbeThreads = 512;

// Up to kProbeMaxTargets buffers of `bytes` each (16-byte multiples), in any GPU's or mapped
// host memory.
struct ProbeTargets {
  void* ptr[kProbeMaxTargets];
  int count;
  size_t bytes;
};

// Blocks x targets: blockIdx.y picks the target, so every target gets `blocks` blocks.
cudaError_t launchProbeStores(const ProbeTargets& t, int blocks, cudaStream_t s);
// The same reads; sink: blocks * count * kProbeThreads 16-byte words of local memory that the
// loaded values are folded into (so that the loads cannot be optimised away).
cudaError_t launchProbeLoads(const ProbeTargets& t, int blocks, void* sink, cudaStream_t s);

// A flag ping-pong of `rounds`: the starter writes `theirs` = i and waits for `mine` = i, the
// echo waits for `mine` = i and writes `theirs` = i. Flags start at 0. Each thread gives up at
// timeout_ns after its start; *result_ns (the starter's) gets the whole time, 0 after a timeout.
cudaError_t launchProbePing(unsigned* mine, unsigned* theirs, int rounds, bool starter,
                            unsigned long long timeout_ns, unsigned long long* result_ns,
                            cudaStream_t s);

// The probe's kernels, for the start-up image check (kernels/runtime/image_check.h).
std::vector<const void*> probeKernels();

}  // namespace topo
}  // namespace tpcomm
