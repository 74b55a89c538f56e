// The call geometry the chunked algorithms share (two-shot, twoshot.cu; island, island.cu): a
// message goes in chunks of at most chunk_vecs vectors, one step (one slot) each; a chunk splits
// into `parts` segments, one per owning rank; a slot holds `areas` areas of seg_cap entries per
// rank. Block b handles the same offsets [b*per, b*per + per) of every segment in every step of
// the call, even in a shorter last step, so every wait of a thread is on entries written by the
// same thread index of its peers (why four slots then suffice: docs/PROTOCOL.md). Plain
// arithmetic on explicit grid coordinates, so the CPU tests check what the kernels use.
#pragma once

#include <cstddef>

#include "kernels/layout/device_comm.h"
#include "kernels/layout/ll_layout.h"  // TPCOMM_HOST_DEVICE

namespace tpcomm {

TPCOMM_HOST_DEVICE inline size_t minVecs(size_t a, size_t b) {
  return a < b ? a : b;
}

struct ChunkedCall {
  size_t seg_cap;     // entries per area and rank
  size_t chunk_vecs;  // vectors per step (at most what the slot layout holds)
  size_t nvec;        // vectors in the message
  size_t nsteps;
  size_t per;  // a block's share of a segment, fixed for the call
  int parts;   // segments per chunk
};

// Arguments only, so the kernels compute it before griddepcontrol.wait and its parameter loads
// overlap the previous kernel (as in the one-shot kernel, oneshot.cu). grid: blocks in the call.
TPCOMM_HOST_DEVICE inline ChunkedCall chunkedCall(size_t slot_entries, int areas, int parts,
                                                  size_t nvec, size_t chunk_vecs, unsigned grid) {
  ChunkedCall k;
  k.parts = parts;
  k.seg_cap = slot_entries / static_cast<size_t>(areas);
  k.chunk_vecs = minVecs(chunk_vecs, k.seg_cap * static_cast<size_t>(parts));
  k.nvec = nvec;
  k.nsteps = (nvec + k.chunk_vecs - 1) / k.chunk_vecs;
  const size_t seg_full = (minVecs(k.chunk_vecs, nvec) + parts - 1) / static_cast<size_t>(parts);
  k.per = (seg_full + grid - 1) / grid;
  return k;
}

// Step `step` of a call whose first step epoch is epoch0, for thread `thread` of block `block`.
struct ChunkStep {
  unsigned long long epoch;  // the step's epoch: its slot (and its LL flag, stepFlag)
  size_t slot_off;           // byte offset of the step's slot in a staging buffer
  size_t base;               // message vector index of the chunk's start
  size_t len;                // vectors in this chunk
  size_t seg;                // vectors per segment of this chunk (the last may be shorter)
  size_t o0, o1;  // this thread's first offset in a segment; the block's end in a segment

  // Vectors of segment d in this chunk (0 past the end of a short last chunk).
  TPCOMM_HOST_DEVICE size_t segLen(int d) const {
    const size_t first = static_cast<size_t>(d) * seg;
    return first >= len ? 0 : minVecs(seg, len - first);
  }
};

TPCOMM_HOST_DEVICE inline ChunkStep chunkStep(const ChunkedCall& k, unsigned long long epoch0,
                                              size_t step, size_t slot_bytes, unsigned block,
                                              unsigned thread) {
  ChunkStep s;
  s.epoch = epoch0 + step;
  s.slot_off = static_cast<size_t>(s.epoch % kNumSlots) * slot_bytes;
  s.base = step * k.chunk_vecs;
  s.len = minVecs(k.chunk_vecs, k.nvec - s.base);
  s.seg = (s.len + k.parts - 1) / static_cast<size_t>(k.parts);
  s.o0 = block * k.per + thread;
  s.o1 = minVecs(block * k.per + k.per, s.seg);
  return s;
}

// Reduce-scatter and all-gather (rsag.cu, rsag_pull.cu) run a two-shot's halves over a message
// that is already split: rank d's segment is its own run of seg_vecs vectors (the call's count per
// rank), so a step takes the same offsets [first, first + len) of every segment. The call is
// chunkedCall's over world * seg_vecs vectors in its two-shot's slot layout of `areas` areas
// (twoshot: 2 * world; twoshot_pull: world + 1), whose steps hold chunk_vecs / world vectors of
// each segment.
TPCOMM_HOST_DEVICE inline ChunkedCall segmentedCallIn(size_t slot_entries, int areas, int world,
                                                      size_t seg_vecs, size_t chunk_vecs,
                                                      unsigned grid) {
  ChunkedCall k = chunkedCall(slot_entries, areas, world, static_cast<size_t>(world) * seg_vecs,
                              chunk_vecs, grid);
  const size_t per_step = k.chunk_vecs / static_cast<size_t>(world);
  k.nsteps = per_step == 0 ? 0 : (seg_vecs + per_step - 1) / per_step;
  k.per = (minVecs(per_step, seg_vecs) + grid - 1) / grid;
  return k;
}
// The push halves' (rsag.cu): the two-shot's layout.
TPCOMM_HOST_DEVICE inline ChunkedCall segmentedCall(size_t slot_entries, int world, size_t seg_vecs,
                                                    size_t chunk_vecs, unsigned grid) {
  return segmentedCallIn(slot_entries, 2 * world, world, seg_vecs, chunk_vecs, grid);
}

struct SegmentStep {
  unsigned long long epoch;  // the step's epoch: its slot (and its LL flag, stepFlag)
  size_t slot_off;           // byte offset of the step's slot in a staging buffer
  size_t first;              // vector index, in every segment, of the step's first vector
  size_t len;                // vectors of every segment in this step
  size_t o0, o1;             // this thread's first offset in the step; the block's end
};

TPCOMM_HOST_DEVICE inline SegmentStep segmentStep(const ChunkedCall& k, unsigned long long epoch0,
                                                  size_t step, size_t slot_bytes, unsigned block,
                                                  unsigned thread) {
  SegmentStep s;
  const size_t seg_vecs = k.nvec / static_cast<size_t>(k.parts);
  const size_t per_step = k.chunk_vecs / static_cast<size_t>(k.parts);
  s.epoch = epoch0 + step;
  s.slot_off = static_cast<size_t>(s.epoch % kNumSlots) * slot_bytes;
  s.first = step * per_step;
  s.len = minVecs(per_step, seg_vecs - s.first);
  s.o0 = block * k.per + thread;
  s.o1 = minVecs(block * k.per + k.per, s.len);
  return s;
}

}  // namespace tpcomm
