// How many blocks of each variant's kernels one multiprocessor of this rank's GPU holds at once,
// for every thread count the planner may launch: what the planner needs to cap the grids of ranks
// that share a GPU (plan/co_residency.h). Plain data: it travels in the rank's handle (MachineView)
// so that every rank computes the same caps.
#pragma once

#include <cstdint>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

// Thread counts the planner launches: whole warps, 32..512 (kThreadsPerBlock); index i is 32(i+1).
constexpr int kThreadSteps = 16;

struct VariantOccupancy {
  uint16_t sms;  // multiprocessors (cudaDevAttrMultiProcessorCount; fewer under an MPS limit)
  uint8_t pdl;   // compute capability 9.0+: a kernel launched with programmatic dependent launch
                 // may start while the previous kernel on its stream still runs
  // 1: thread-block clusters launch here (compute capability 9.0+, and the runtime answered the
  // cluster occupancy query), so the fused call may spread a row over a cluster
  uint8_t clusters;
  // [variant][thread step]: cudaOccupancyMaxActiveBlocksPerMultiprocessor of the variant's
  // kernels for this world, the least over the datatypes (the plan does not depend on the
  // datatype) and over a row's cluster kernels (clusterBlocksPerSm); 0 where the variant has no
  // kernel (the island kernels below world 4).
  uint8_t blocks_per_sm[tpcommNumVariants][kThreadSteps];
};

// A cluster kernel's blocks per multiprocessor as the co-residency cap counts them: the blocks
// that fit in whole clusters of kMaxClusterBlocks (cudaOccupancyMaxActiveClusters: a cluster must
// fit in one GPC), spread over the multiprocessors, rounded down. Clusters of any size dividing
// kMaxClusterBlocks fit in that many blocks, which is why the planner takes powers of two.
int clusterBlocksPerSm(int max_clusters, int sms);

// Fills *out for `device` (current) and the kernels of `world`; fails only when CUDA does.
tpcommResult_t queryOccupancy(int device, int world, VariantOccupancy* out);

}  // namespace tpcomm
