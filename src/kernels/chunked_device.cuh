// The call geometry the chunked algorithms share (two-shot, twoshot.cu; island, island.cu): a
// message goes in chunks of at most chunk_vecs vectors, one step (one slot) each; a chunk splits
// into `parts` segments, one per owning rank; a slot holds `areas` areas of seg_cap entries per
// rank. Block b handles the same offsets [b*per, b*per + per) of every segment in every step of
// the call, even in a shorter last step, so every wait of a thread is on entries written by the
// same thread index of its peers (why four slots then suffice: docs/PROTOCOL.md).
#pragma once

#include "kernels/proto_device.cuh"
#include "kernels/vec_device.cuh"

namespace tpcomm {

struct ChunkedCall {
  size_t seg_cap;     // entries per area and rank
  size_t chunk_vecs;  // vectors per step (at most what the slot layout holds)
  size_t nvec;        // vectors in the message
  size_t nsteps;
  size_t per;  // a block's share of a segment, fixed for the call
  int parts;   // segments per chunk
};

// Arguments only: called before griddepcontrol.wait, so its parameter loads overlap the
// previous kernel (as in the one-shot kernel, oneshot.cu).
template <typename T>
__device__ __forceinline__ ChunkedCall chunkedCall(size_t slot_entries, int areas, int parts,
                                                   size_t count, size_t chunk_vecs) {
  constexpr int E = VecTraits<T>::kElems;
  ChunkedCall k;
  k.parts = parts;
  k.seg_cap = slot_entries / areas;
  k.chunk_vecs = min(chunk_vecs, k.seg_cap * parts);
  k.nvec = (count + E - 1) / E;
  k.nsteps = (k.nvec + k.chunk_vecs - 1) / k.chunk_vecs;
  const size_t seg_full = (min(k.chunk_vecs, k.nvec) + parts - 1) / parts;
  k.per = (seg_full + gridDim.x - 1) / gridDim.x;
  return k;
}

// Step `step` of a call whose first step epoch is epoch0, for this thread.
struct ChunkStep {
  unsigned long long epoch;  // the step's epoch: its slot and flag
  uint32_t flag;
  size_t slot_off;  // byte offset of the step's slot in a staging buffer
  size_t base;      // message vector index of the chunk's start
  size_t len;       // vectors in this chunk
  size_t seg;       // vectors per segment of this chunk (the last may be shorter)
  size_t o0, o1;    // this thread's first offset in a segment; the block's end in a segment

  // Vectors of segment d in this chunk (0 past the end of a short last chunk).
  __device__ __forceinline__ size_t segLen(int d) const {
    const size_t first = static_cast<size_t>(d) * seg;
    return first >= len ? 0 : min(seg, len - first);
  }
};

__device__ __forceinline__ ChunkStep chunkStep(const ChunkedCall& k, unsigned long long epoch0,
                                               size_t step, size_t slot_bytes) {
  ChunkStep s;
  s.epoch = epoch0 + step;
  s.flag = stepFlag(s.epoch);
  s.slot_off = (s.epoch % kNumSlots) * slot_bytes;
  s.base = step * k.chunk_vecs;
  s.len = min(k.chunk_vecs, k.nvec - s.base);
  s.seg = (s.len + k.parts - 1) / k.parts;
  s.o0 = blockIdx.x * k.per + threadIdx.x;
  s.o1 = min(blockIdx.x * k.per + k.per, s.seg);
  return s;
}

}  // namespace tpcomm
