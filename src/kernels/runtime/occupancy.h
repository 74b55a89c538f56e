// What the planner needs to know of this rank's GPU to cap the grids of ranks that share it
// (plan/co_residency.h) and to choose thread-block clusters: plain data that travels in the
// rank's handle (MachineView), so that every rank computes the same caps.
#pragma once

#include <cstdint>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

struct GpuOccupancy {
  uint16_t sms;  // multiprocessors (cudaDevAttrMultiProcessorCount; fewer under an MPS limit)
  uint8_t pdl;   // compute capability 9.0+: a kernel launched with programmatic dependent launch
                 // may start while the previous kernel on its stream still runs
  // 1: thread-block clusters launch here (compute capability 9.0+, and the runtime answered the
  // cluster occupancy query of the fused cluster kernel), so the fused call may spread a row over
  // a cluster
  uint8_t clusters;
};

// Fills *out for `device` (current); `world` picks the cluster kernel asked about. Fails only
// when CUDA does.
tpcommResult_t queryOccupancy(int device, int world, GpuOccupancy* out);

}  // namespace tpcomm
