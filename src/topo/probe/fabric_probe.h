// What the fabric probe measured (topo/fabric_probe_run.h runs it on the GPUs), as plain data:
// per pair alone and with every pair at once, SM store and load bandwidth, copy-engine bandwidth
// and one-way latency, and the same against pinned host memory. Pure C++, so the verdict
// (judgeFabric) and the JSON round trip are tested on synthetic fabrics without a GPU.
#pragma once

#include <string>
#include <vector>

#include "topo/probe/fabric_verdict.h"

namespace tpcomm {
namespace topo {

// GPUs one probe measures at most (a machine's first eight: kMaxRanks).
constexpr int kProbeMaxGpus = 8;

// One direction of traffic, from the GPU whose kernels run to the target memory. Negative: not
// measured (the probe ran out of time, or the measurement does not apply).
struct LinkSpeed {
  double store_gbps = -1;  // a kernel writing into the target (what push kernels do)
  double load_gbps = -1;   // a kernel reading the target (what pull kernels do)
  double copy_gbps = -1;   // the copy engine (cudaMemcpyPeerAsync; to host: cudaMemcpyAsync)
  double latency_us = -1;  // one way: half the round trip of a flag ping-pong
};

struct ProbePair {
  int a = 0, b = 0;  // topology indices; kernels on GPU a, target memory on GPU b (a == b:
                     // two buffers on one GPU, which measures memory and launches, not a link)
  LinkSpeed speed;
};

struct FabricProbe {
  std::string topology_key;      // Topology::key() of the machine probed
  std::string fabric_hash;       // probeFabricHash(): bus ids, paths and P2P of the GPUs probed
  std::vector<int> gpus;         // topology indices probed (a repeated index: buffers share it)
  std::vector<ProbePair> pairs;  // each pair alone
  LinkSpeed all_pairs;  // per GPU, the mean, with every GPU moving data to every other at once
  LinkSpeed host;       // GPU gpus[0] with pinned host memory (what a box without P2P uses)
  double elapsed_ms = 0;
  std::string error;  // "" or why the probe stopped early (a deadline, a CUDA error)

  bool sameGpu() const;  // two or more buffers on one GPU (gpus {0, 0}; without gpus: the pairs)
};

// Thresholds of the verdict, from the published PCIe measurements (../shared/BRIEF.md, "PCIe
// fabrics"; docs/TOPOLOGY.md, "The fabric probe"). Collapsed stores ran at 0.07x (Broadcom
// PEX890xx, dual Turin: 37 -> 2.7 GB/s) and 0.13x (Microchip PM50100: 52 -> 7 GB/s) of one
// pair's; healthy fabrics keep 0.45x (cross-socket 23.8 of 53 GB/s) to 0.7x (switches: 37-41 of
// 53-56 GB/s). 0.25 sits a factor of ~2 from both sides.
constexpr double kCollapseStoreRatio = 0.25;
// "Loads hold": with every pair at once, loads move at least this many times what stores do
// (published: 27 vs 2.7 GB/s), so the pull kernels gain on the push kernels they replace.
constexpr double kLoadsHoldFactor = 2.0;

struct FabricFinding {
  FabricVerdict verdict = FabricVerdict::kUnknown;
  std::string what;    // the numbers and what they mean
  std::string action;  // what tpcomm does about it
};

// The verdict from the numbers. p2p_works: the GPUs probed reach each other by P2P (no P2P gives
// kNoP2p whatever the numbers). Missing numbers (a probe cut short) and a probe of one GPU
// (host memory only) give kUnknown. Two buffers on one GPU (sameGpu(), e.g. {0, 0}) cross no
// link, so need no P2P and cannot collapse: kPushFine for ranks sharing that GPU where stores
// hold with both at once, labelled "one GPU: ..."; kUnknown where they fall or numbers are missing.
FabricFinding judgeFabric(const FabricProbe& probe, bool p2p_works);

// The median of the pairs' single-pair numbers (negative: none measured).
double medianStoreGbps(const FabricProbe& probe);
double medianLoadGbps(const FabricProbe& probe);

}  // namespace topo
}  // namespace tpcomm
