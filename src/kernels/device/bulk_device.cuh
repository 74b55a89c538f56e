// The bulk protocol (host_bulk: pinned host memory, larger messages), all of its device side: a
// rank writes its data once, plain, into its own outbox (device_comm.h has the layout), and its
// peers read it from there; arrival is one flag per block and step, set after a system-scope
// fence once the block's share is written, and polled by one thread of the reading block (NCCL's
// "Simple" protocol does the same per chunk). Every byte crosses PCIe once each way, and PCIe
// carries one poll per block and step instead of LL's poll per entry and flag word per data
// word; the price is a fence and a flag round trip per step, so LL stays the small-message path.
// The one-shot kernel (oneshot.cu) runs over it through BulkSession.
#pragma once

#include "kernels/device/barrier_device.cuh"
#include "kernels/device/session_device.cuh"

namespace tpcomm {

struct BulkProto {
  static constexpr int kEntry = 1;
  static constexpr unsigned kBackoffNs = 0;    // entries are never polled (arrived is always true)
  static constexpr bool kFencedReads = false;  // its flags are a release and an acquire already
  struct Raw {
    uint4 a;
  };
  // Volatile: host memory a peer rewrites every kNumSlots steps must not be served from cache.
  __device__ static Raw load(const uint4* e) { return Raw{loadVolatile(e)}; }
  template <typename T>
  __device__ static bool arrived(const Raw&, uint32_t) {
    return true;  // the block's flag said so before any entry is read
  }
  __device__ static uint4 data(const Raw& r) { return r.a; }
  __device__ static void put(uint4* e, const uint4& v, uint32_t) { storeVec16(e, v); }
  __device__ static void clear(uint4*) {}
  __device__ static size_t slotBytes(const DeviceComm& c) { return c.out_slot_bytes; }
  __device__ static char* const* prints(const DeviceComm& c) { return c.hprints; }
  // Rank r's flag of slot `slot` and block `block`.
  __device__ static uint32_t* flag(const DeviceComm& c, int r, size_t slot, unsigned block) {
    char* flags = c.hout + static_cast<size_t>(r) * c.out_stride + kNumSlots * c.out_slot_bytes;
    return reinterpret_cast<uint32_t*>(flags) + slot * kBulkFlagBlocks + block;
  }
};

// The pull protocol's phases (pull_device.cuh, PullPhaseProto) over the bulk protocol's outboxes
// in pinned host memory: the two-shot pull's host forms, full precision (twoshot_pull.cu) and
// quantized (twoshot_pull_wire.cu), whose ranks cannot reach each other's memory. Phase 0's
// flags are BulkProto's; phase 1's follow them (kBulkFlagBytes).
template <int kPhase>
struct HostPullPhaseProto {
  static_assert(kPhase < kBulkPhases, "the bulk outbox holds kBulkPhases flag sets");
  static constexpr int kEntry = 1;
  __device__ static size_t slotBytes(const DeviceComm& c) { return c.out_slot_bytes; }
  __device__ static char* const* prints(const DeviceComm& c) { return c.hprints; }
  __device__ static void put(uint4* e, const uint4& v, uint32_t) { storeVec16(e, v); }
  __device__ static char* outbox(const DeviceComm& c, int r) {
    return c.hout + static_cast<size_t>(r) * c.out_stride;
  }
  __device__ static uint32_t* flag(const DeviceComm& c, int r, size_t slot, unsigned block) {
    return BulkProto::flag(c, r, slot + kPhase * kNumSlots, block);
  }
};

// In thread 0 of a block whose threads have written their share of step `step` into this rank's
// outbox slot, and met in a barrier since: makes the block's writes visible at system scope and
// sets the block's flag. The fence covers the other threads' writes because the barrier orders
// them before it (the PTX model's release is cumulative; NCCL's Simple protocol posts a step the
// same way). Proto: whose flags (the pull protocol over peer memory publishes the same way,
// pull_device.cuh).
template <typename Proto = BulkProto>
__device__ __forceinline__ void publishFlag(const DeviceComm& c, unsigned long long step) {
  if (threadIdx.x == 0) {
    uint32_t* f = Proto::flag(c, c.rank, step % kNumSlots, blockIdx.x);
    asm volatile("fence.acq_rel.sys;" ::: "memory");
    asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(f), "r"(stepFlag(step)) : "memory");
  }
}

// Called by all `np` pushing threads of the block once each has written its share of step
// `step`: the barrier among them, then publishFlag.
template <typename Proto = BulkProto>
__device__ __forceinline__ void bulkPublish(const DeviceComm& c, unsigned np,
                                            unsigned long long step) {
  namedBarrierSync(kBarBulkPushed, np);
  publishFlag<Proto>(c, step);
}

// Called by all `nr` reducing threads of the block (tr: the index among them) before they read
// step `step`. Thread tr == 0 waits for every other rank's flag of this block and step (acquire
// loads: the entries read after the barrier are those written before the flag). False in every
// reducing thread if it timed out or the communicator was aborted: a barrier reduction hands the
// outcome to the block, so every reducing thread gives up together and no barrier is left waiting.
__device__ __forceinline__ bool bulkAwait(const DeviceComm& c, unsigned tr, unsigned nr,
                                          unsigned long long step, WaitCtx& ctx) {
  bool failed = false;
  if (tr == 0) {
    const uint32_t want = stepFlag(step);
    for (int r = 0; r < c.world && !failed; ++r) {
      if (r == c.rank) continue;
      const uint32_t* f = BulkProto::flag(c, r, step % kNumSlots, blockIdx.x);
      unsigned spins = 0;
      for (;;) {
        uint32_t v;
        asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");
        if (v == want) break;
        if (!keepWaiting(ctx, spins, c, r, step)) {
          failed = true;
          break;
        }
      }
    }
  }
  return !namedBarrierOr(kBarBulkFlags, nr, failed);
}

// The one-shot over the bulk protocol: the roles of OneShotSession reversed. A rank writes step
// s into its own outbox slot (epoch + s) % kNumSlots and publishes it; it reads every source's
// step from the source's outbox once the source's flag for this block and step is set.
template <int kW>
struct BulkSession : OneShotCallSession {
  static constexpr int kEntry = 1;
  char* src_base;     // rank r's outbox: src_base + r * src_stride vectors
  size_t src_stride;  // in vectors
  char* const* mine;  // [0]: my outbox (the kernel's array, as OneShotSession's peer)

  __device__ __forceinline__ BulkSession(const DeviceComm& comm, const LaunchParams& l, int rank,
                                         int /*world*/, char* (&bases)[kW])
      : OneShotCallSession(comm, l), mine(bases) {
    slot_bytes = BulkProto::slotBytes(comm);
    src_base = comm.hout;
    src_stride = comm.out_stride / kVecBytes;
#pragma unroll
    for (int p = 0; p < kW; ++p) bases[p] = p == 0 ? src_base + rank * comm.out_stride : nullptr;
    loadWaitParams(comm);
  }
  // My vector `index` of the step goes into my outbox slot only.
  __device__ __forceinline__ void send(uint32_t flag, size_t slot_off, int, int, size_t,
                                       size_t index, const uint4& y) const {
    BulkProto::put(reinterpret_cast<uint4*>(mine[0] + slot_off) + index, y, flag);
  }
  // The block's np pushing threads have written step s: publish it.
  __device__ __forceinline__ void sent(unsigned np, size_t s) const {
    bulkPublish(c, np, epoch + s);
  }
  // The block's nr reducing threads (tr: the index among them) wait until every peer published
  // step s for this block. False, in all of them, once the call has given up.
  __device__ __forceinline__ bool ready(WaitCtx& wait, unsigned tr, unsigned nr, size_t s) {
    return bulkAwait(c, tr, nr, epoch + s, wait);
  }
  __device__ __forceinline__ uint4* sources(size_t s) const {
    return reinterpret_cast<uint4*>(src_base + ((epoch + s) % kNumSlots) * slot_bytes);
  }
  __device__ __forceinline__ size_t sourceStride(size_t) const {
    return src_stride;
  }
};

template <int kW>
struct SessionOf<BulkProto, kW> {
  using type = BulkSession<kW>;
};

}  // namespace tpcomm
