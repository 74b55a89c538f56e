// The two-shot all-reduces' call geometry, from a kernel's arguments alone (twoshot.cu over the
// push slots, twoshot_pull.cu over the pull outboxes), and their failure branch: a slot holds
// kPerRank * world + kExtra areas of Proto's entries (twoshot: 2 * world, a reduce-scatter row
// and an all-gather row per rank; twoshot_pull: world + 1, my chunk by segment and my reduced
// segment), a chunk world segments.
#pragma once

#include "kernels/device/poison_device.cuh"
#include "kernels/device/proto_device.cuh"
#include "kernels/layout/chunk_layout.h"

namespace tpcomm {

template <typename Proto, typename T, int kPerRank, int kExtra>
__device__ __forceinline__ ChunkedCall twoShotGeometry(const DeviceComm& c, size_t count,
                                                       size_t chunk_vecs) {
  constexpr int E = VecTraits<T>::kElems;
  return chunkedCall(slotVecs<Proto>(c), kPerRank * c.world + kExtra, c.world, (count + E - 1) / E,
                     chunk_vecs, gridDim.x);
}

// The failure branch (poison_device.cuh), a call: this thread's outputs from step `from` on, the
// call's geometry recomputed from the kernel's arguments. Inlined, the branches held values on
// the kernels' success path (register spills where they run near their register limit).
template <typename Proto, typename T, int kPerRank, int kExtra>
__device__ __noinline__ void poisonTwoShotSteps(const DeviceComm& c, const LaunchParams& l, T* recv,
                                                size_t count, size_t chunk_vecs, size_t from) {
  const ChunkedCall k = twoShotGeometry<Proto, T, kPerRank, kExtra>(c, count, chunk_vecs);
  poisonChunkSteps<T>(chunkStepOffsets(k, from, blockIdx.x, threadIdx.x), c.world, recv, count,
                      l.aligned);
}

}  // namespace tpcomm
