// The data loops every algorithm is built from, over any protocol (proto_device.cuh): load a batch
// of user vectors, push a range, sum the sources' entries of a range in rank order, receive a
// range. Batches of vectors per thread, so that several loads are in flight before the first use:
// a thread that loads, stores, loads again pays one memory latency per vector; a batch pays one.
// Kernels reach these through their call's session (session_device.cuh), which supplies the step's
// flag and the waits' state (each wait's deadline).
#pragma once

#include "kernels/device/proto_device.cuh"
#include "kernels/device/vec_device.cuh"
#include "kernels/device/wait_device.cuh"

namespace tpcomm {

constexpr int kPushBatch = 4;    // vectors per thread per push round
constexpr int kReduceBatch = 2;  // vectors per thread per reduce round (x world registers each)

// A value select. `cond ? a[i] : b[j]` on arrays selects an address, which sends both arrays to
// local memory; selecting values keeps them in registers.
__device__ __forceinline__ uint4 pick(bool cond, uint4 a, uint4 b) {
  return make_uint4(cond ? a.x : b.x, cond ? a.y : b.y, cond ? a.z : b.z, cond ? a.w : b.w);
}

// Raw (not canonicalised) user vectors v + u*stride for u < n (n <= U, a run-time batch size);
// zeros past end or past n.
template <typename T, int U>
__device__ __forceinline__ void loadBatch(const T* src, size_t v, size_t stride, size_t end,
                                          size_t count, bool aligned, int n, uint4 (&x)[U]) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const size_t vv = v + u * stride;
    x[u] = (u < n && vv < end) ? loadVec<T>(src, vv, count, aligned) : make_uint4(0, 0, 0, 0);
  }
}

// Clears the entries sumSources read (the same sources and indices), then afterReads. Separate so
// that a kernel can put its clears after a barrier: a store still in flight there is one more
// thing a release must wait for (fused_cluster.cu).
template <typename Proto, int kW, int R>
__device__ __forceinline__ void clearSources(const DeviceComm& c, int nsrc, int self, uint4* slot,
                                             size_t src_stride, size_t o, size_t stride,
                                             size_t o_end) {
  constexpr int K = Proto::kEntry;
#pragma unroll
  for (int u = 0; u < R; ++u)
#pragma unroll
    for (int r = 0; r < kW; ++r)
      if (r < nsrc && r != self && o + u * stride < o_end)
        Proto::clear(slot + (r * src_stride + o + u * stride) * K);
  afterReads<Proto>(c);
}

// kW: the world-size class the kernel was built for (2, 4 or 8 >= nsrc), so the per-source
// registers are sized for it rather than for 8 ranks.
// Sums in fp32, in source order 0..nsrc-1, R vectors at slot indices o + u*stride (< o_end):
// source s's vector from entry (s*src_stride + index) of `slot` (waiting for it to arrive; rank
// rank_of(s) is named if it never does), except source `self`, which is this rank's own input
// vector own_v + u*stride. Hands each sum to done(u, acc) (for the u in range) and clears the
// sources' entries (Proto; kClear false: the caller does, with clearSources). before_waits() runs
// once the batch's loads are issued and before the first wait: what a thread must also wait for
// (the fused kernels' fingerprint check) then overlaps its loads instead of preceding them. False
// on timeout or abort.
struct NoPreWait {
  __device__ __forceinline__ void operator()() const {}
};
template <typename Proto, typename T, int kW, int R, bool kClear = true, typename RankOf,
          typename Done, typename PreWait = NoPreWait>
__device__ __forceinline__ bool sumSources(const DeviceComm& c, int nsrc, int self, RankOf rank_of,
                                           uint4* slot, size_t src_stride, size_t o, size_t stride,
                                           size_t o_end, const T* send, size_t own_v, size_t count,
                                           bool aligned, unsigned long long step, WaitCtx& ctx,
                                           Done done, PreWait before_waits = {}) {
  constexpr int K = Proto::kEntry;
  const uint32_t flag = stepFlag(step);
  // Own vectors are kept apart from the sources' (x[u][self] would be indexed by a run-time
  // value, which sends the whole array to local memory).
  typename Proto::Raw x[R][kW];
  uint4 own[R];
#pragma unroll
  for (int u = 0; u < R; ++u) {  // every load of the batch first...
    own[u] = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int r = 0; r < kW; ++r) x[u][r] = typename Proto::Raw{};
    if (o + u * stride >= o_end) continue;
    own[u] = loadVec<T>(send, own_v + u * stride, count, aligned);
#pragma unroll
    for (int r = 0; r < kW; ++r)
      if (r < nsrc && r != self)
        x[u][r] = Proto::load(slot + (r * src_stride + o + u * stride) * K);
  }
  before_waits();
#pragma unroll
  for (int u = 0; u < R; ++u) {  // ...then the waits and the sums
    if (o + u * stride >= o_end) continue;
    own[u] = canon<T>(own[u]);
    // Re-poll only the sources still missing; indices stay compile-time (registers, no stack).
    unsigned spins = 0, pause = 0;
    for (bool first = true; !ctx.failed; first = false) {
      if (!first) pollPause<Proto>(pause);
      int missing = -1;
#pragma unroll
      for (int r = 0; r < kW; ++r) {
        if (r < nsrc && r != self && !Proto::template arrived<T>(x[u][r], flag)) {
          missing = r;
          x[u][r] = Proto::load(slot + (r * src_stride + o + u * stride) * K);
        }
      }
      if (missing < 0 || !keepWaiting(ctx, spins, c, rank_of(missing), step)) break;
    }
    Acc<T> acc;
    acc.set(pick(self == 0, own[u], Proto::data(x[u][0])));
#pragma unroll
    for (int r = 1; r < kW; ++r)
      if (r < nsrc) acc.add(pick(r == self, own[u], Proto::data(x[u][r])));
    done(u, acc);
  }
  if (ctx.failed) return false;
  if constexpr (kClear)
    clearSources<Proto, kW, R>(c, nsrc, self, slot, src_stride, o, stride, o_end);
  return true;
}

// The same over every rank of the communicator, in rank order, rounded to T: y[u] is the sum of
// vector o + u*stride (peer r's from entry r*src_stride + index), for the u in range.
template <typename Proto, typename T, int kW, int R>
__device__ __forceinline__ bool reduceBatch(const DeviceComm& c, uint4* slot, size_t src_stride,
                                            size_t o, size_t stride, size_t o_end, const T* send,
                                            size_t own_v, size_t count, bool aligned,
                                            unsigned long long step, WaitCtx& ctx, uint4 (&y)[R]) {
  return sumSources<Proto, T, kW, R>(
      c, c.world, c.rank, [](int r) { return r; }, slot, src_stride, o, stride, o_end, send, own_v,
      count, aligned, step, ctx, [&y](int u, const Acc<T>& acc) { y[u] = acc.result(); });
}

// Pushes this rank's input vectors first + o, for this thread's offsets o (o0, o0 + stride, ...
// below end, pb per round: LaunchParams::push_batch), canonicalised, into entries o of `dst` (a
// peer's area).
template <typename Proto, typename T>
__device__ __forceinline__ void pushRange(const T* send, size_t first, size_t o0, size_t end,
                                          size_t stride, size_t count, bool aligned, int pb,
                                          uint4* dst, uint32_t flag) {
  constexpr int K = Proto::kEntry;
  for (size_t o = o0; o < end; o += stride * pb) {
    uint4 x[kPushBatch];
    loadBatch<T>(send, first + o, stride, first + end, count, aligned, pb, x);
#pragma unroll
    for (int u = 0; u < kPushBatch; ++u)
      if (u < pb && o + u * stride < end)
        Proto::put(dst + (o + u * stride) * K, canon<T>(x[u]), flag);
  }
}

// Copies entries o of `src` (this rank's area, filled by rank `peer`), for this thread's offsets
// o below end, to output vectors first + o, waiting for each to arrive and clearing it after.
// False on timeout or abort.
template <typename Proto, typename T>
__device__ __forceinline__ bool receiveRange(const DeviceComm& c, uint4* src, size_t o0, size_t end,
                                             size_t stride, T* recv, size_t first, size_t count,
                                             bool aligned, int pb, int peer,
                                             unsigned long long step, WaitCtx& ctx) {
  constexpr int K = Proto::kEntry;
  const uint32_t flag = stepFlag(step);
  for (size_t o = o0; o < end; o += stride * pb) {
    typename Proto::Raw y[kPushBatch];
#pragma unroll
    for (int u = 0; u < kPushBatch; ++u)
      if (u < pb && o + u * stride < end) y[u] = Proto::load(src + (o + u * stride) * K);
#pragma unroll
    for (int u = 0; u < kPushBatch; ++u) {
      if (u >= pb || o + u * stride >= end) continue;
      unsigned spins = 0, pause = 0;
      while (!Proto::template arrived<T>(y[u], flag) && !ctx.failed) {
        if (!keepWaiting(ctx, spins, c, peer, step)) break;
        pollPause<Proto>(pause);
        y[u] = Proto::load(src + (o + u * stride) * K);
      }
      if (ctx.failed) return false;
      storeVec<T>(recv, first + o + u * stride, count, aligned, Proto::data(y[u]));
      Proto::clear(src + (o + u * stride) * K);
    }
  }
  afterReads<Proto>(c);
  return true;
}

}  // namespace tpcomm
