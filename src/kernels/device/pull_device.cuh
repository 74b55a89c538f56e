// The pull protocol over peer memory (oneshot_pull, twoshot_pull), all of its device side: a rank
// writes its data with local stores into its own outbox (device_comm.h has the layout) and
// publishes each step with one flag per block and phase; its peers read the flag and then the data
// over the fabric with loads. On PCIe boxes whose switches collapse posted peer writes
// (docs/TOPOLOGY.md, "Push or pull over PCIe"), that moves every byte by loads, which hold their
// bandwidth there. The bulk host protocol (bulk_device.cuh) has the same shape in pinned host
// memory; this one polls every peer's flag at once (a thread per peer), since over a fabric each
// poll is a round trip. Why an owner cannot rewrite an outbox slot a peer still reads:
// docs/PROTOCOL.md, "Pull".
#pragma once

#include "kernels/device/barrier_device.cuh"
#include "kernels/device/bulk_device.cuh"
#include "kernels/device/session_device.cuh"
#include "kernels/layout/oneshot_layout.h"  // ringRank

namespace tpcomm {

// Phase 0 of a step: a rank's input (one-shot; two-shot's reduce-scatter sources); phase 1: its
// reduced segment (two-shot's all-gather sources). `kPhase` picks the flag set.
template <int kPhase>
struct PullPhaseProto {
  static constexpr int kEntry = 1;
  __device__ static size_t slotBytes(const DeviceComm& c) { return c.pull_slot_bytes; }
  __device__ static char* const* prints(const DeviceComm& c) { return c.prints; }
  __device__ static void put(uint4* e, const uint4& v, uint32_t) { storeVec16(e, v); }
  // Rank r's outbox (its slots), as seen from here.
  __device__ static char* outbox(const DeviceComm& c, int r) { return c.pulls[r]; }
  // Rank r's flag of slot `slot`, this phase, block `block`.
  __device__ static uint32_t* flag(const DeviceComm& c, int r, size_t slot, unsigned block) {
    char* flags = c.pulls[r] + kNumSlots * c.pull_slot_bytes;
    return reinterpret_cast<uint32_t*>(flags) + (slot * kPullPhases + kPhase) * kBulkFlagBlocks +
           block;
  }
};
using PullProto = PullPhaseProto<0>;

// Called by the block's `nr` reading threads (tr: the index among them, nr >= npeers) before
// they read step `step` of phase kPhase from ranks peer_of(0 .. npeers - 1): thread tr polls rank
// peer_of(tr)'s flag with system-scope acquire loads, all peers at once; a barrier reduction
// hands the block the outcome, so every reading thread gives up together (timeout, abort, or a
// failed fingerprint check in `wait`) and no barrier is left waiting.
// Box: whose outboxes and flags (PullPhaseProto over peer memory; HostPullPhaseProto, in
// bulk_device.cuh, over pinned host memory).
template <int kPhase, typename PeerOf, typename Box = PullPhaseProto<kPhase>>
__device__ __forceinline__ bool pullAwaitFrom(const DeviceComm& c, unsigned tr, unsigned nr,
                                              int npeers, PeerOf peer_of, unsigned long long step,
                                              WaitCtx& wait) {
  // tr < npeers, written so that pullAwait compiles to the code it had before pullAwaitFrom.
  if (tr + 1 < static_cast<unsigned>(npeers) + 1u && !wait.failed) {
    const int r = peer_of(static_cast<int>(tr));
    const uint32_t* f = Box::flag(c, r, step % kNumSlots, blockIdx.x);
    const uint32_t want = stepFlag(step);
    unsigned spins = 0;
    for (;;) {
      uint32_t v;
      asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");
      if (v == want || !keepWaiting(wait, spins, c, r, step)) break;
    }
  }
  return !namedBarrierOr(kBarBulkFlags, nr, wait.failed);
}

// pullAwaitFrom over every peer: thread tr polls rank (rank + 1 + tr) % world.
template <int kPhase, typename Box = PullPhaseProto<kPhase>>
__device__ __forceinline__ bool pullAwait(const DeviceComm& c, unsigned tr, unsigned nr,
                                          unsigned long long step, WaitCtx& wait) {
  const auto peer_of = [&c](int t) { return ringRank(c.rank, t + 1, c.world); };
  return pullAwaitFrom<kPhase, decltype(peer_of), Box>(c, tr, nr, c.world - 1, peer_of, step, wait);
}

// Sums in fp32, in source order, vectors o + u*stride (< o_end) of area `area` (entry offsets
// into each outbox: base + slot) of the nsrc sources src[0 .. nsrc), after the sources' flags
// were awaited, and hands each sum to done(u, acc): source `self` is my own input vector
// own_v + u*stride, the others are read from their outboxes. Volatile loads: a slot is rewritten
// every kNumSlots steps and must not be served from a cache.
template <typename T, int kW, int R, typename Done>
__device__ __forceinline__ void pullAcc(char* const (&src)[kW], int nsrc, int self, size_t area,
                                        size_t o, size_t stride, size_t o_end, const T* send,
                                        size_t own_v, size_t count, bool aligned, Done done) {
  uint4 x[R][kW];
#pragma unroll
  for (int u = 0; u < R; ++u) {  // every load of the batch first...
#pragma unroll
    for (int r = 0; r < kW; ++r) x[u][r] = make_uint4(0, 0, 0, 0);
    if (o + u * stride >= o_end) continue;
#pragma unroll
    for (int r = 0; r < kW; ++r) {
      if (r >= nsrc) continue;
      x[u][r] = r == self
                    ? canon<T>(loadVec<T>(send, own_v + u * stride, count, aligned))
                    : loadVolatile(reinterpret_cast<const uint4*>(src[r]) + area + o + u * stride);
    }
  }
#pragma unroll
  for (int u = 0; u < R; ++u) {  // ...then the sums
    Acc<T> acc;
    acc.set(x[u][0]);
#pragma unroll
    for (int r = 1; r < kW; ++r)
      if (r < nsrc) acc.add(x[u][r]);
    done(u, acc);
  }
}

// pullAcc over every rank's outbox in rank order (src: every rank's), each sum rounded into y.
template <typename T, int kW, int R>
__device__ __forceinline__ void pullSum(const DeviceComm& c, char* const (&src)[kW], size_t area,
                                        size_t o, size_t stride, size_t o_end, const T* send,
                                        size_t own_v, size_t count, bool aligned, uint4 (&y)[R]) {
  pullAcc<T, kW, R>(src, c.world, c.rank, area, o, stride, o_end, send, own_v, count, aligned,
                    [&y](int u, const Acc<T>& acc) { y[u] = acc.result(); });
}

// Copies vectors o (this thread's offsets o0, o0 + stride, ... below end) of `from` (a peer's
// outbox area, published and awaited) to output vectors first + o; kPushBatch loads in flight
// at once, since each is a fabric round trip.
template <typename T>
__device__ __forceinline__ void pullCopy(const uint4* from, size_t o0, size_t end, size_t stride,
                                         T* recv, size_t first, size_t count, bool aligned) {
  for (size_t o = o0; o < end; o += stride * kPushBatch) {
    uint4 z[kPushBatch];
#pragma unroll
    for (int u = 0; u < kPushBatch; ++u)
      if (o + u * stride < end) z[u] = loadVolatile(from + o + u * stride);
#pragma unroll
    for (int u = 0; u < kPushBatch; ++u)
      if (o + u * stride < end) storeVec<T>(recv, first + o + u * stride, count, aligned, z[u]);
  }
}

// The one-shot over the pull protocol (oneshot.cu runs over it as over BulkSession): a rank
// writes step s into its own outbox slot (epoch + s) % kNumSlots and publishes it; it reads
// every source's step from the source's outbox once the source's flag for this block is set.
template <int kW>
struct PullSession : OneShotCallSession {
  static constexpr int kEntry = 1;
  char* const* mine;  // [0]: my outbox (the kernel's array, as OneShotSession's peer)
  char* src[kW];      // every rank's outbox, in rank order

  __device__ __forceinline__ PullSession(const DeviceComm& comm, const LaunchParams& l, int rank,
                                         int world, char* (&bases)[kW])
      : OneShotCallSession(comm, l), mine(bases) {
    slot_bytes = PullProto::slotBytes(comm);
#pragma unroll
    for (int r = 0; r < kW; ++r) src[r] = r < world ? comm.pulls[r] : nullptr;
#pragma unroll
    for (int p = 0; p < kW; ++p) bases[p] = p == 0 ? comm.pulls[rank] : nullptr;
    loadWaitParams(comm);
  }
  // My vector `index` of the step goes into my outbox slot only (a local store).
  __device__ __forceinline__ void send(uint32_t, size_t slot_off, int, int, size_t, size_t index,
                                       const uint4& y) const {
    PullProto::put(reinterpret_cast<uint4*>(mine[0] + slot_off) + index, y, 0);
  }
  // The block's np pushing threads have written step s: publish it.
  __device__ __forceinline__ void sent(unsigned np, size_t s) const {
    bulkPublish<PullProto>(c, np, epoch + s);
  }
  // The block's nr reducing threads wait until every peer published step s for this block.
  __device__ __forceinline__ bool ready(WaitCtx& wait, unsigned tr, unsigned nr, size_t s) {
    return pullAwait<0>(c, tr, nr, epoch + s, wait);
  }
  // The sources are every rank's outbox (src), not one array with a stride: reduce below finds
  // step s's slot from its step epoch, so these are unused.
  __device__ __forceinline__ uint4* sources(size_t) const {
    return nullptr;
  }
  __device__ __forceinline__ size_t sourceStride(size_t) const {
    return 0;
  }
  // CallSession::reduce's contract (oneshot.cu calls it) over the outboxes; arrival was ready's.
  template <typename Proto, typename T, int, int R>
  __device__ __forceinline__ bool reduce(WaitCtx& wait, uint4*, size_t, size_t o, size_t stride,
                                         size_t o_end, const T* send, size_t own_v, size_t count,
                                         unsigned long long step, uint4 (&y)[R]) {
    const size_t area = (step % kNumSlots) * slot_bytes / kVecBytes;
    pullSum<T, kW, R>(c, src, area, o, stride, o_end, send, own_v, count, l.aligned, y);
    return !wait.failed;
  }
};

template <int kW>
struct SessionOf<PullProto, kW> {
  using type = PullSession<kW>;
};

}  // namespace tpcomm
