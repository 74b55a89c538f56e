// The table of kernel entry points of one algorithm: one instantiation per datatype for each
// world-size class (kernels keep per-peer registers sized for 2, 4 or 8 ranks). `Entry` names the
// kernel template: a struct with `template <typename Proto, typename T, int kW> static const
// void* get()`.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/layout/island_world.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {

template <typename Entry, typename Proto, int kW>
KernelSet kernelSetFor() {
  return KernelSet{{Entry::template get<Proto, float, kW>(),
                    Entry::template get<Proto, __half, kW>(),
                    Entry::template get<Proto, __nv_bfloat16, kW>()}};
}

template <typename Entry, typename Proto>
KernelSet kernelSetByWorld(int world) {
  return world <= 2   ? kernelSetFor<Entry, Proto, 2>()
         : world <= 4 ? kernelSetFor<Entry, Proto, 4>()
                      : kernelSetFor<Entry, Proto, 8>();
}

// The island kernels' table (island.cu, island_pull.cu): built per island-size class (2, 4),
// for the worlds islandWorld serves; all zero elsewhere.
template <typename Entry, typename Proto>
KernelSet kernelSetByIsland(int world) {
  if (!islandWorld(world)) return KernelSet{};
  return world / 2 <= 2 ? kernelSetFor<Entry, Proto, 2>() : kernelSetFor<Entry, Proto, 4>();
}

}  // namespace tpcomm
