// The halves of the two-shot pull, as device functions over one step of an outbox slot: the
// all-reduce (twoshot_pull.cu) runs both, reduce-scatter and all-gather over the pull protocol
// (rsag_pull.cu) one each, as twoshot_device.cuh serves twoshot.cu and rsag.cu. A step's slot in
// a rank's outbox holds world areas of seg_cap entries (area d: the rank's input part of segment
// d), then the reduced area (the segment the rank owns, as its peers read it). The segments'
// places in user memory are twoshot_device.cuh's Segments; every function takes a thread's
// offsets o0, o0 + stride, ... below the block's end o1 of each segment (chunk_layout.h), so a
// block reads exactly the entries its peers' blocks of the same index wrote and published.
#pragma once

#include "kernels/device/pull_device.cuh"
#include "kernels/device/twoshot_device.cuh"

namespace tpcomm {

// Phase 0, the write: my input's part of every peer's segment d into area d of my outbox slot
// (`slot`: the slot's first entry in my outbox); the caller publishes it.
template <typename Proto, typename T>
__device__ __forceinline__ void pullStage(const DeviceComm& c, const LaunchParams& l, uint4* slot,
                                          size_t seg_cap, size_t o0, size_t o1, size_t stride,
                                          const Segments<const T>& in) {
  for (int p = 1; p < c.world; ++p) {
    const int d = ringRank(c.rank, p, c.world);
    pushRange<Proto, T>(in.mem(d), in.index(d), o0, min(o1, in.len(d)), stride, in.count, l.aligned,
                        l.push_batch, slot + d * seg_cap, 0);
  }
}

// Phase 0, the read (after pullAwait<0>): my own segment from area `rank` of every peer's slot
// (`slot`: its first entry in every outbox), summed in fp32 in rank order with my own input,
// each sum handed to done(o, y) at its offset o.
template <typename T, int kW, typename Done>
__device__ __forceinline__ void pullReduceOwn(const DeviceComm& c, const LaunchParams& l,
                                              char* const (&src)[kW], size_t slot, size_t seg_cap,
                                              size_t o0, size_t o1, size_t stride,
                                              const Segments<const T>& in, Done done) {
  const size_t own_end = min(o1, in.len(c.rank));
  const size_t own_first = in.index(c.rank);
  constexpr int R = kReduceBatch;
  for (size_t o = o0; o < own_end; o += stride * R) {
    uint4 y[R];
    pullSum<T, kW, R>(c, src, slot + c.rank * seg_cap, o, stride, own_end, in.mem(c.rank),
                      own_first + o, in.count, l.aligned, y);
#pragma unroll
    for (int u = 0; u < R; ++u)
      if (o + u * stride < own_end) done(o + u * stride, y[u]);
  }
}

// Phase 1, the write of the all-gather alone: my input's own segment (forOwnVectors) into my
// outbox's reduced area `area` and my own output (so it holds the bits my peers read).
template <typename Proto, typename T>
__device__ __forceinline__ void pullShareOwn(const DeviceComm& c, const LaunchParams& l,
                                             uint4* area, size_t o0, size_t o1, size_t stride,
                                             const Segments<const T>& in, const Segments<T>& out) {
  forOwnVectors<T>(c, l, o0, o1, stride, in, [&](size_t o, const uint4& y) {
    Proto::put(area + o, y, 0);
    storeVec<T>(out.mem(c.rank), out.index(c.rank) + o, out.count, l.aligned, y);
  });
}

// Phase 1, the read (after pullAwait<1>): every other segment d from the reduced area of its
// owner's slot (`area`: its first entry in every outbox) into the output. Box: whose outboxes
// (PullProto: peer memory; HostPullPhaseProto<0>: pinned host memory).
template <typename T, typename Box = PullProto>
__device__ __forceinline__ void pullGather(const DeviceComm& c, const LaunchParams& l, size_t area,
                                           size_t o0, size_t o1, size_t stride,
                                           const Segments<T>& out) {
  for (int p = 1; p < c.world; ++p) {
    const int d = ringRank(c.rank, p, c.world);
    const uint4* from = reinterpret_cast<const uint4*>(Box::outbox(c, d)) + area;
    pullCopy<T>(from, o0, min(o1, out.len(d)), stride, out.mem(d), out.index(d), out.count,
                l.aligned);
  }
}

}  // namespace tpcomm
