// The halves of the two-shot, as device functions over one step of a chunked slot: the all-reduce
// (twoshot.cu) runs all three phases, reduce-scatter and all-gather (rsag.cu) one half each.
// A step's slot holds 2 * world areas of seg_cap entries per rank: [0, world) the reduce-scatter
// area, a row per source; [world, 2 * world) the all-gather area, a row per owner. Every phase
// takes a thread's offsets o0, o0 + stride, ... below the block's end o1 of each segment, so a
// thread waits only on entries its peers' same thread wrote (chunk_layout.h) and the thread that
// reads an input vector is the one that writes that output vector (in-place calls are safe).
#pragma once

#include "kernels/device/session_device.cuh"

namespace tpcomm {

// Where the segments of one step lie in user memory: segment d is vectors index(d) .. of the
// count elements at mem(d). The all-reduce's segments are consecutive runs of one array
// (elem_stride 0, vec_stride: the step's segment length); reduce-scatter's input and
// all-gather's output are one array per rank (elem_stride: the per-rank count, vec_stride 0).
template <typename T>
struct Segments {
  T* at;               // segment 0's memory
  size_t elem_stride;  // elements from segment d's memory to segment d + 1's
  size_t first;        // vector index of segment 0's part of this step
  size_t vec_stride;   // vectors from segment d's part to segment d + 1's, within one array
  size_t count;        // elements that may be touched from a segment's memory
  size_t seg;          // vectors of a segment in this step, at most
  size_t span;         // vectors the step covers from `first` (a short last chunk cuts segments)

  __device__ __forceinline__ T* mem(int d) const { return at + d * elem_stride; }
  __device__ __forceinline__ size_t index(int d) const { return first + d * vec_stride; }
  __device__ __forceinline__ size_t len(int d) const {
    const size_t f = d * vec_stride;
    return f >= span ? 0 : min(seg, span - f);
  }
};

// Reduce-scatter push: my part of segment d (every peer d) into rank d's reduce-scatter area, in
// my row.
template <typename Proto, typename T>
__device__ __forceinline__ void scatterPush(const DeviceComm& c, const LaunchParams& l,
                                            size_t slot_off, size_t seg_cap, size_t o0, size_t o1,
                                            size_t stride, uint32_t flag,
                                            const Segments<const T>& in) {
  constexpr int K = Proto::kEntry;
  for (int p = 1; p < c.world; ++p) {
    const int d = (c.rank + p) % c.world;
    const size_t end = min(o1, in.len(d));
    uint4* dst = reinterpret_cast<uint4*>(Proto::bufs(c)[d] + slot_off);
    pushRange<Proto, T>(in.mem(d), in.index(d), o0, end, stride, in.count, l.aligned, l.push_batch,
                        dst + c.rank * seg_cap * K, flag);
  }
}

// Reduce-scatter reduce: my own segment summed over the ranks in rank order (my input's vectors
// from `in`, the peers' from my reduce-scatter area `mine`), each sum handed to done(o, y) at its
// offset o. False once the call gave up.
template <typename Proto, typename T, int kW, typename Done>
__device__ __forceinline__ bool reduceOwn(CallSession& session, WaitCtx& wait, uint4* mine,
                                          size_t seg_cap, size_t o0, size_t o1, size_t stride,
                                          const Segments<const T>& in, unsigned long long step,
                                          Done done) {
  constexpr int R = kW * Proto::kEntry <= 4 ? kReduceBatch : 1;  // the peers' entries in registers
  const int rank = session.c.rank;
  const size_t own_end = min(o1, in.len(rank));
  for (size_t o = o0; o < own_end; o += stride * R) {
    uint4 y[R];
    if (!session.template reduce<Proto, T, kW>(wait, mine, seg_cap, o, stride, own_end,
                                               in.mem(rank), in.index(rank) + o, in.count, step, y))
      return false;  // timed out; no block-wide barrier follows
#pragma unroll
    for (int u = 0; u < R; ++u)
      if (o + u * stride < own_end) done(o + u * stride, y[u]);
  }
  return true;
}

// All-gather push of one vector of my segment (offset o): into every peer's all-gather area, in
// my row, and into my own output.
template <typename Proto, typename T>
__device__ __forceinline__ void shareOwn(const DeviceComm& c, const LaunchParams& l,
                                         size_t slot_off, size_t seg_cap, size_t o, const uint4& y,
                                         uint32_t flag, const Segments<T>& out) {
  constexpr int K = Proto::kEntry;
  const size_t ag_row = (c.world + c.rank) * seg_cap;
  // Not unrolled: unrolled by 4 (as nvcc chose once the launch fields became LaunchParams), the
  // 2- and 4-rank kernels grew by 7-12% and world 2 ran 2-5% slower (docs/bench/s27).
#pragma unroll 1
  for (int p = 1; p < c.world; ++p) {
    uint4* dst = reinterpret_cast<uint4*>(Proto::bufs(c)[(c.rank + p) % c.world] + slot_off);
    Proto::put(dst + (ag_row + o) * K, y, flag);
  }
  storeVec<T>(out.mem(c.rank), out.index(c.rank) + o, out.count, l.aligned, y);
}

// All-gather's own part of a step: my input's vectors of my segment, in batches of the push
// batch, canonicalised as every push is (so my output holds the bits my peers receive), each
// handed to share(o, y) at its offset o.
template <typename T, typename Share>
__device__ __forceinline__ void forOwnVectors(const DeviceComm& c, const LaunchParams& l, size_t o0,
                                              size_t o1, size_t stride, const Segments<const T>& in,
                                              Share share) {
  const int pb = l.push_batch;
  const size_t end = min(o1, in.len(c.rank));
  const T* src = in.mem(c.rank);
  const size_t first = in.index(c.rank);
  for (size_t o = o0; o < end; o += stride * pb) {
    uint4 x[kPushBatch];
    loadBatch<T>(src, first + o, stride, first + end, in.count, l.aligned, pb, x);
#pragma unroll
    for (int u = 0; u < kPushBatch; ++u)
      if (u < pb && o + u * stride < end) share(o + u * stride, canon<T>(x[u]));
  }
}

// All-gather push of my whole part of a step.
template <typename Proto, typename T>
__device__ __forceinline__ void gatherPush(const DeviceComm& c, const LaunchParams& l,
                                           size_t slot_off, size_t seg_cap, size_t o0, size_t o1,
                                           size_t stride, uint32_t flag,
                                           const Segments<const T>& in, const Segments<T>& out) {
  forOwnVectors<T>(c, l, o0, o1, stride, in, [&](size_t o, const uint4& y) {
    shareOwn<Proto, T>(c, l, slot_off, seg_cap, o, y, flag, out);
  });
}

// All-gather receive: every other segment, from its owner's row of my all-gather area, into the
// output. False once the call gave up.
template <typename Proto, typename T>
__device__ __forceinline__ bool gatherReceive(CallSession& session, WaitCtx& wait, uint4* mine,
                                              size_t seg_cap, size_t o0, size_t o1, size_t stride,
                                              const Segments<T>& out, unsigned long long step) {
  constexpr int K = Proto::kEntry;
  const DeviceComm& c = session.c;
  for (int p = 1; p < c.world; ++p) {
    const int d = (c.rank + p) % c.world;
    const size_t end = min(o1, out.len(d));
    if (!session.template receive<Proto, T>(wait, mine + ((c.world + d) * seg_cap) * K, o0, end,
                                            stride, out.mem(d), out.index(d), out.count, d, step))
      return false;  // timed out
  }
  return true;
}

}  // namespace tpcomm
