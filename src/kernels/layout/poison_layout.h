// The chunked kernels' steps (chunk_layout.h) as a thread's failure branch walks them to poison the
// output vectors it still owns (poison_device.cuh): from the step it gave up in (its ChunkStep or
// SegmentStep) to the call's last, the offsets chunkStep and segmentStep give, computed from that
// step alone and without a run-time division. The branch then keeps nothing alive on the success
// path that the step did not (inlined branches that recomputed the call's geometry, or a 64-bit
// division there, which compiles to a call, made ptxas spill on some kernels' success paths).
// Plain arithmetic: the CPU tests check it against chunkStep and segmentStep.
#pragma once

#include <cstddef>

#include "kernels/layout/chunk_layout.h"

namespace tpcomm {

// a / d for 1 <= d <= kMaxRanks (a chunk's segments), by constant divisors: multiplications.
TPCOMM_HOST_DEVICE inline size_t divByParts(size_t a, int d) {
  static_assert(kMaxRanks == 8, "one case per divisor up to kMaxRanks");
  switch (d) {
    case 1:
      return a;
    case 2:
      return a / 2;
    case 3:
      return a / 3;
    case 4:
      return a / 4;
    case 5:
      return a / 5;
    case 6:
      return a / 6;
    case 7:
      return a / 7;
    default:
      return a / 8;
  }
}

// chunkStep's base, len, seg, o0 and o1 (epoch and slot_off left 0), for a kernel that found the
// communicator aborted before its first step.
TPCOMM_HOST_DEVICE inline ChunkStep chunkStepOffsets(const ChunkedCall& k, size_t step,
                                                     unsigned block, unsigned thread) {
  ChunkStep s{};
  s.base = step * k.chunk_vecs;
  s.len = minVecs(k.chunk_vecs, k.nvec - s.base);
  s.seg = divByParts(s.len + k.parts - 1, k.parts);
  s.o0 = block * k.per + thread;
  s.o1 = minVecs(block * k.per + k.per, s.seg);
  return s;
}

// segmentStep's first, len, o0 and o1 (epoch and slot_off left 0), likewise.
TPCOMM_HOST_DEVICE inline SegmentStep segmentStepOffsets(const ChunkedCall& k, size_t step,
                                                         unsigned block, unsigned thread) {
  SegmentStep s{};
  const size_t seg_vecs = divByParts(k.nvec, k.parts);
  const size_t per_step = divByParts(k.chunk_vecs, k.parts);
  s.first = step * per_step;
  s.len = minVecs(per_step, seg_vecs - s.first);
  s.o0 = block * k.per + thread;
  s.o1 = minVecs(block * k.per + k.per, s.len);
  return s;
}

// A chunked call (nvec vectors in chunks of `parts` segments) from step st on: at(first, end) for
// each segment of each step, the thread's vectors there being first + o, o = st.o0, + stride, ...
// below end. Every step but the call's last is st.len long and cut alike (segments of st.seg, the
// block's end st.o1); the last is whatever remains.
template <typename At>
TPCOMM_HOST_DEVICE inline void forChunkStepsFrom(const ChunkStep& st, size_t nvec, int parts,
                                                 At at) {
  if (st.len == 0) return;  // no step at all (a call of nothing)
  for (size_t base = st.base; base < nvec; base += st.len) {
    const size_t len = minVecs(st.len, nvec - base);
    const size_t seg = divByParts(len + parts - 1, parts);
    const size_t o1 = minVecs(st.o1, seg);
    for (int d = 0; d < parts; ++d) {
      const size_t f = static_cast<size_t>(d) * seg;
      at(base + f, f >= len ? 0 : minVecs(o1, len - f));
    }
  }
}

// A segmented call (runs of seg_vecs vectors) from step st on: at(first, end) once a step, for
// the offsets first + o, o = st.o0, ... below end of every run.
template <typename At>
TPCOMM_HOST_DEVICE inline void forSegmentStepsFrom(const SegmentStep& st, size_t seg_vecs, At at) {
  if (st.len == 0) return;  // no step at all (a call of nothing)
  for (size_t first = st.first; first < seg_vecs; first += st.len)
    at(first, minVecs(st.o1, seg_vecs - first));
}

}  // namespace tpcomm
