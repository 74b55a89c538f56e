// What one rank sees of the machine from its GPU (which GPUs it can reach, over NVLink or not,
// which pairs a P2P test found broken) and which tuning table it would use. Carried in the rank's
// handle, so that every rank derives the fabric and the policy from the same facts: ranks that
// disagreed would launch different kernels and wait for each other until the deadline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/layout/device_comm.h"
#include "kernels/runtime/occupancy.h"
#include "plan/co_residency.h"
#include "plan/policy.h"
#include "plan/tuning_table.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

struct MachineView {
  struct Gpu {
    char bus[16];    // normalized PCI bus id "0000:18:00.0"
    uint8_t access;  // this rank's GPU can map its memory (P2P supported)
    uint8_t nvlink;  // ... over NVLink
    uint8_t broken;  // a P2P test (tpcomm doctor) found the pair broken
    uint8_t path;    // topo::PathClass from this rank's GPU (kUnknown without a topology)
  };
  uint32_t count;
  uint8_t
      fabric_verdict;  // FabricVerdict of the machine's fabric probe (comm/lifecycle/probe_view.h)
  uint8_t pad[3];
  uint64_t tuning_hash;  // of the tuning table this rank loaded; 0: none
  Gpu gpus[kMaxRanks];
  GpuOccupancy occupancy;  // of this rank's GPU (init: queryOccupancy), for the grid caps
};

struct RankInfo;

// Fills v from this process's view of `device`, and loads the machine's tuning table (if any)
// into *table. Never fails the communicator: facts that cannot be read are left out (logged).
void buildMachineView(int device, MachineView* v, TuningTable* table, std::string* topology_key);

// The fabric every rank agrees on, by topo::classify over the pairs as all ranks see them: NVLink
// if every pair of distinct GPUs is reachable over NVLink from both sides, PCIe if every pair is
// reachable, host memory otherwise. A peer GPU a rank cannot see (CUDA_VISIBLE_DEVICES) counts as
// PCIe-reachable (IPC may still map it). *reason: classify's line.
Fabric agreeFabric(const RankInfo* all, int world, bool* ranks_share_gpu, std::string* reason);

// Two islands (topo::twoIslands) from the paths in every rank's view, the worse of the two
// directions of a pair; island_of_rank gets 0 or 1 per rank. Every rank computes the same.
bool agreeIslands(const RankInfo* all, int world, std::vector<int>* island_of_rank);

// The grid caps of ranks sharing GPUs (plan/co_residency.h): the ranks on each GPU (by bus id,
// across processes too) and that GPU's SMs, the least over its ranks' views (equal unless their
// processes see the GPU differently, e.g. under different MPS limits). Every rank computes the
// same from the same handles.
GridCaps agreeGridCaps(const RankInfo* all, int world);

// The fabric verdict every rank uses: a write collapse if any rank's view saw one (pushes must
// not run where one rank measured them collapsing), else the views' common verdict, else
// kUnknown (the push defaults). Every rank computes the same.
FabricVerdict agreeFabricVerdict(const RankInfo* all, int world);

// True when every rank loaded the same tuning table (non-zero equal hashes).
bool agreeTuning(const RankInfo* all, int world);

// True when every rank's GPU launches thread-block clusters (GpuOccupancy::clusters): the
// fused call's row split, which orders its sum of squares, is then the same on every rank.
bool agreeClusters(const RankInfo* all, int world);

}  // namespace tpcomm
