// tpcomm-floor: the physical floors an all-reduce call sits on, measured on this machine, so a
// benchmark can be read against them (docs/BENCHMARKS.md):
//   * a kernel inside a CUDA graph: empty, with programmatic dependent launch (PDL), and with the
//     loads a call cannot avoid (its input; the communicator's epoch and abort words);
//   * one-way latency of a flag between two GPUs over peer memory (NVLink/PCIe P2P) and through
//     pinned host memory, from a ping-pong of two single-thread kernels;
//   * zero-copy bandwidth between SMs and pinned host memory with every GPU streaming at once
//     (writes, reads, and both together in three proportions: what the host-memory transport
//     moves its data with), and the copy engines' bandwidth the same way, for comparison.
// Pure CUDA, no tpcomm library: it measures the machine, not our code.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "bench/floor_probes.cuh"

using namespace floor_probe;

namespace {

// The floors between devices 0 and 1: a kernel pushing to a peer, the flag latencies, and the
// minimal one-shot's variants and grids.
void printPeerFloors() {
  uint4* remote = nullptr;
  CK(cudaSetDevice(1));
  CK(cudaMalloc(&remote, 1024));
  CK(cudaSetDevice(0));
  const cudaError_t e = cudaDeviceEnablePeerAccess(1, 0);
  if (e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();
    printf("%-52s %6.2f us\n", "PDL + load/store + 1 KiB to a peer GPU", chainUs(0, 4, remote));
  }
  CK(cudaSetDevice(1));
  CK(cudaFree(remote));
  printf("%-52s %6.2f us\n", "one-way flag, peer memory", oneWayUs(false));
  printf("%-52s %6.2f us\n", "one-way flag, pinned host memory", oneWayUs(true));
  const struct {
    const char* name;
    int how;
  } minis[] = {
      {"minimal 1 KiB one-shot, epoch in device memory", 0},
      {"  ... slot baked into the launch", kSlotBaked},
      {"  ... epoch, trigger dependents at entry", kTriggerEarly},
      {"  ... epoch, input not the previous output", kFreshInput},
      {"  ... slot baked, input not the previous output", kSlotBaked | kFreshInput},
      {"  ... epoch, abort word loaded first", kAbortLoad},
      {"  ... epoch, deadline read before the push", kTimerFirst},
      {"  ... epoch, both (as the library's kernel)", kAbortLoad | kTimerFirst},
  };
  for (const auto& m : minis) printf("%-52s %6.2f us\n", m.name, miniOneShotUs(m.how));
  // Where a larger call's time goes: the same kernel over grids of one vector per thread
  // (slot baked), against its 1 KiB row "slot baked into the launch" above.
  const struct {
    const char* name;
    int how, blocks, threads;
  } grids[] = {
      {"minimal one-shot, 2 KiB: 1 block x 128", 0, 1, 128},
      {"  ... 2 KiB: 2 blocks x 64", 0, 2, 64},
      {"  ... 16 KiB: 8 blocks x 128 (the library's grid)", 0, 8, 128},
      {"  ... 16 KiB: 16 blocks x 64", 0, 16, 64},
      {"  ... 16 KiB: 1 block x 1024", 0, 1, 1024},
      {"  ... 16 KiB grid, blocks 1..7 exit at once", kOnlyBlock0, 8, 128},
      {"  ... 16 KiB, 64 ns pause between missed polls", kPollPause, 8, 128},
      {"  ... 64 KiB: 32 blocks x 128", 0, 32, 128},
      {"  ... 256 KiB: 128 blocks x 128", 0, 128, 128},
      {"  ... 256 KiB grid, blocks 1..127 exit at once", kOnlyBlock0, 128, 128},
      {"  ... 256 KiB, 64 ns pause between missed polls", kPollPause, 128, 128},
      {"  ... 1 MiB: 128 blocks x 512", 0, 128, 512},
  };
  for (const auto& g : grids)
    printf("%-52s %6.2f us\n", g.name, miniOneShotUs(g.how, g.blocks, g.threads));
}

// Zero-copy and copy-engine bandwidth to pinned host memory, every GPU at once.
void printHostBandwidth(int ngpu) {
  // SM traffic is what the host transport uses; the copy engines are the other way to move data
  // between a GPU and host memory (both directions at once is the all-reduce's pattern).
  const struct {
    const char* name;
    HostTraffic how;
  } traffic[] = {
      {"SMs, writes", {false, 4, false, false}},
      {"SMs, reads", {false, 0, false, false}},
      {"SMs, 1/4 writing, 3/4 reading", {false, 1, false, false}},
      {"SMs, half writes, half reads", {false, 2, false, false}},
      {"SMs, 3/4 writing, 1/4 reading", {false, 3, false, false}},
      {"copy engines, device to host", {true, 0, true, false}},
      {"copy engines, host to device", {true, 0, false, true}},
      {"copy engines, both directions at once", {true, 0, true, true}},
  };
  for (const auto& t : traffic)
    printf("%-52s %6.1f GB/s per GPU (%d GPUs at once)\n",
           (std::string("host memory, ") + t.name).c_str(), hostBandwidthGBs(ngpu, t.how), ngpu);
}

}  // namespace

int main() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
    fprintf(stderr, "tpcomm-floor: no CUDA device\n");
    return 2;
  }
  cudaDeviceProp p{};
  CK(cudaGetDeviceProperties(&p, 0));
  printf("# tpcomm-floor on %d x %s (cc %d.%d); us per kernel in a graph of %d, median of %d\n", n,
         p.name, p.major, p.minor, kChain, kReps);
  const char* names[] = {"empty kernel", "empty kernel, PDL wait", "PDL + 1 KiB load/store",
                         "PDL + load/store + epoch/abort loads"};
  for (int m = 0; m < 4; ++m) printf("%-52s %6.2f us\n", names[m], chainUs(0, m, nullptr));
  if (n >= 2) printPeerFloors();
  printHostBandwidth(n);
  return 0;
}
