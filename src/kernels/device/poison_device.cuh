// What a failed call leaves in the outputs it could not compute: all ones, a NaN in fp32, fp16
// and bf16 (and, byte by byte, in FP8 e4m3), never the numbers an earlier call left there. An
// engine that never reads tpcommCommGetAsyncError (a CUDA graph's replays cannot) then computes on
// NaN instead of on plausible stale values (docs/PROTOCOL.md, "Bounded waits").
//
// Only failure branches write it: a thread that gave up (a timeout, an abort seen, a disagreeing
// call) poisons every output vector it would still have written, and a kernel that finds the
// communicator aborted at entry poisons all of its vectors. Each thread poisons the vectors it
// owns in the kernel's own mapping, so the output is covered whichever of the grid's blocks saw
// the abort. The success path must not pay for the branches, and what ptxas allocates for it is
// what they can change: a branch uses only what the kernel holds there anyway (the step it gave
// up in: poison_layout.h walks the later steps from it, without a division), or, in the kernels
// where even that cost registers on the success path (the one-shot, the two-shots, the fused
// kernels: they run near their register limit), it is one call of a __noinline__ function of
// the kernel's file that recomputes the call's geometry from the kernel's arguments.
// scripts/sass_diff.sh and ptxas's -v report show what a change to them does.
#pragma once

#include "kernels/device/vec_device.cuh"
#include "kernels/layout/poison_layout.h"

namespace tpcomm {

// The poison: the sentinel's bits, read here as data (outputs are never polled).
__device__ __forceinline__ uint4 poisonVec() {
  return sentinelVec();
}

// Output vectors first + o of `out` (count elements), for o = o0, o0 + stride, ... below end.
template <typename T>
__device__ __forceinline__ void poisonRange(T* out, size_t first, size_t o0, size_t end,
                                            size_t stride, size_t count, bool aligned) {
  for (size_t o = o0; o < end; o += stride)
    storeVec<T>(out, first + o, count, aligned, poisonVec());
}

// The chunked all-reduces (two-shot, island, and their pull variants): this thread's outputs from
// step st (its ChunkStep) to the call's last, offsets o0, o0 + blockDim.x, ... of each of the
// chunk's `parts` segments (those it reduces or shares and those it receives alike).
template <typename T>
__device__ __forceinline__ void poisonChunkSteps(const ChunkStep& st, int parts, T* recv,
                                                 size_t count, bool aligned) {
  constexpr int E = VecTraits<T>::kElems;
  forChunkStepsFrom(st, (count + E - 1) / E, parts, [&](size_t first, size_t end) {
    poisonRange<T>(recv, first, st.o0, end, blockDim.x, count, aligned);
  });
}

// Reduce-scatter and all-gather (segmentedCall, st: the step's SegmentStep): the same over `runs`
// runs of `count` elements (reduce-scatter's output is its own run, 1; all-gather's is every
// rank's, world).
template <typename T>
__device__ __forceinline__ void poisonSegmentSteps(const SegmentStep& st, int runs, T* recv,
                                                   size_t count, bool aligned) {
  constexpr int E = VecTraits<T>::kElems;
  forSegmentStepsFrom(st, (count + E - 1) / E, [&](size_t first, size_t end) {
    for (int d = 0; d < runs; ++d)
      poisonRange<T>(recv + d * count, first, st.o0, end, blockDim.x, count, aligned);
  });
}

}  // namespace tpcomm
