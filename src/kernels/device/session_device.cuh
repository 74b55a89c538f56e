// A call's protocol session: the one object through which a kernel reads and advances the epoch,
// finds a step's slot and flag, and waits with a deadline, in the spirit of NCCL's
// ncclLLA2ASession and FlashInfer's LamportComm. Kernels then read as their algorithm.
//   * The epoch (epoch_device.cuh has the ordering argument): read once per call (open*), the
//     block counted in after that read (arrive), and advanced by the call's steps by the last
//     block to arrive (close). Kernels call, in this order: open*, their first pushes, arrive
//     (unless openArrived did), their waits, close.
//   * The slot rotation: step s of the call uses slot (epoch + s) % kNumSlots and the flag
//     stepFlag(epoch + s) (the chunked algorithms take both from chunkStep, chunk_layout.h,
//     which the CPU tests walk).
//   * Bounded waits and abort: open* fails when an earlier timeout aborted the communicator, and
//     every wait gives up once it has seen no progress for the timeout (wait_device.cuh); a
//     thread that gave up skips the rest of its waits.
// CallSession holds the epoch and the waits, for every algorithm; OneShotSession<Proto, kW>
// adds the one-shot's addressing over a push protocol (every rank's slot), and BulkSession
// (bulk_device.cuh) the same over the bulk protocol (outboxes and flags); the one-shot kernel is
// written once over either (SessionOf).
//
// Where each parameter is loaded is part of the contract: the one-shot sessions load theirs in
// the constructor, which kernels run before griddepcontrol.wait, so the constant-cache misses of
// their first touch overlap the previous kernel; CallSession loads the epoch's parameters when it
// opens, as the chunked and lean kernels want. The timeout is loaded only by a wait's first
// deadline check (keepWaiting), off the fast path. scripts/sass_diff.sh shows what a change here
// does to the code.
#pragma once

#include "kernels/device/batch_device.cuh"
#include "kernels/device/epoch_device.cuh"
#include "kernels/device/print_device.cuh"
#include "kernels/device/proto_device.cuh"
#include "kernels/device/wait_device.cuh"
#include "kernels/layout/chunk_layout.h"

namespace tpcomm {

// The fused kernels' plan (they take no LaunchParams argument): the planner sends them
// whole-vector rows of aligned buffers only, and they push one vector a round.
__device__ __forceinline__ LaunchParams fusedLaunchParams() {
  LaunchParams l = {};
  l.push_batch = 1;
  l.aligned = 1;
  return l;
}

struct CallSession {
  const DeviceComm& c;
  unsigned long long epoch = 0;  // the call's first step epoch
  bool advances = false;         // this thread advances the epoch in close()
  // The launch's plan (the kernel's LaunchParams argument; fusedLaunchParams in the fused
  // kernels), read where the waits below use it, as the kernel's own reads would be.
  const LaunchParams& l;

  __device__ CallSession(const DeviceComm& comm, const LaunchParams& launch) : c(comm), l(launch) {}

  // Block-wide (every thread calls it): reads the epoch and counts the block in, for kernels
  // that push nothing before their arrival. False if the communicator was aborted: the kernel
  // returns at once.
  __device__ __forceinline__ bool openArrived() {
    epoch = readEpoch(c);
    if (epoch == ~0ull) return false;
    arrive();
    return true;
  }
  // The chunked kernels' opening (twoshot.cu, rsag.cu, twoshot_pull.cu, island.cu), block-wide:
  // griddepcontrol.wait (the epoch is the previous kernel's last write), openArrived, then the
  // checker's fingerprint out before the first push (print_device.cuh; the peers' are checked
  // before the first wait for data). False if aborted: the kernel returns at once.
  template <typename Proto, typename T, int kW>
  __device__ __forceinline__ bool openAndAnnounce(CallKind kind, size_t count) {
    pdlWait();
    if (!openArrived()) return false;
    if (isPrintChecker()) announce<Proto, kW>(print<T>(kind, count));
    return true;
  }
  // Block-wide: reads the epoch without counting the block in, for a kernel that waits but does
  // not advance it (oneshot_ce's wait kernel: the reduce kernel after it does). False if aborted.
  __device__ __forceinline__ bool openReadOnly() {
    epoch = readEpoch(c);
    return epoch != ~0ull;
  }
  // Per thread, without a block barrier (readEpochThread): the lean kernel's read, alongside its
  // input load. A thread that saw the communicator aborted (aborted()) must push nothing, and
  // every thread of the block must then meet in arriveBlock before it waits for anything.
  __device__ __forceinline__ void openThread() { epoch = readEpochThread(c.state); }
  __device__ __forceinline__ bool aborted() const { return epoch == ~0ull; }
  // After openThread: the barrier that orders every thread's read before the block's arrival,
  // then the arrival. False in every thread if any thread saw the abort.
  __device__ __forceinline__ bool arriveBlock(bool aborted) {
    if (__syncthreads_or(aborted)) return false;
    arrive();
    return true;
  }
  __device__ __forceinline__ void arrive() { advances = arriveEpoch(c); }
  // The waits' state (each wait's deadline, and whether the thread gave up), which every wait
  // below takes. The kernel's own object, not the session's: where a wait loop takes its address,
  // the compiler keeps the object holding it in memory longer, which changes the kernels' code.
  __device__ __forceinline__ WaitCtx startWaits() const { return makeWaitCtx(c); }
  // At the kernel's end, in every thread that did not give up: the last block advances the epoch.
  __device__ __forceinline__ void close(unsigned long long steps) {
    if (advances) advanceEpoch(c, epoch, steps);
  }

  // ---- the call's fingerprint (print_device.cuh), in the checker thread (isPrintChecker) ----
  // Kernels announce it once they have the epoch, before their first push, and check the peers'
  // before their first wait for data (so a call whose geometry differs is caught, not waited
  // out). A failed check marks the thread's waits failed: the kernel then leaves as on a timeout.
  template <typename T>
  __device__ __forceinline__ PrintWords print(CallKind kind, size_t count) const {
    return packPrint(epoch, count, DtypeIndex<T>::value, kind);
  }
  template <typename Proto, int kW>
  __device__ __forceinline__ void announce(const PrintWords& call) const {
    announceCall<Proto, kW>(c, epoch, call);
  }
  template <typename Proto>
  __device__ __forceinline__ void checkPeers(WaitCtx& wait, const PrintWords& call) const {
    if (!checkPeerCalls<Proto>(c, epoch, call, wait.deadline)) wait.failed = true;
  }

  // ---- the chunked algorithms' steps (chunk_layout.h), in this thread ----
  // Step `step` of the call: its epoch, its slot in Proto's slots, and this thread's share.
  template <typename Proto>
  __device__ __forceinline__ ChunkStep chunk(const ChunkedCall& k, size_t step) const {
    return chunkStep(k, epoch, step, Proto::slotBytes(c), blockIdx.x, threadIdx.x);
  }
  template <typename Proto>
  __device__ __forceinline__ SegmentStep segment(const ChunkedCall& k, size_t step) const {
    return segmentStep(k, epoch, step, Proto::slotBytes(c), blockIdx.x, threadIdx.x);
  }

  // ---- waits over a protocol's entries (batch_device.cuh has the loops' contracts) ----
  // Sums every rank's vector o + u*stride in rank order into y. False once the call gave up.
  template <typename Proto, typename T, int kW, int R>
  __device__ __forceinline__ bool reduce(WaitCtx& wait, uint4* slot, size_t src_stride, size_t o,
                                         size_t stride, size_t o_end, const T* send, size_t own_v,
                                         size_t count, unsigned long long step, uint4 (&y)[R]) {
    return reduceBatch<Proto, T, kW, R>(c, slot, src_stride, o, stride, o_end, send, own_v, count,
                                        l.aligned, step, wait, y);
  }
  // The same over nsrc sources named by rank_of, handing each fp32 sum to done.
  // kClear false: the entries stay for the caller's clearSources; before_waits: sumSources.
  template <typename Proto, typename T, int kW, int R, bool kClear = true, typename RankOf,
            typename Done, typename PreWait = NoPreWait>
  __device__ __forceinline__ bool sum(WaitCtx& wait, int nsrc, int self, RankOf rank_of,
                                      uint4* slot, size_t src_stride, size_t o, size_t stride,
                                      size_t o_end, const T* send, size_t own_v, size_t count,
                                      unsigned long long step, Done done,
                                      PreWait before_waits = {}) {
    return sumSources<Proto, T, kW, R, kClear>(c, nsrc, self, rank_of, slot, src_stride, o, stride,
                                               o_end, send, own_v, count, l.aligned, step, wait,
                                               done, before_waits);
  }
  // Copies entries o of `src` (filled by rank `peer`) to output vectors first + o, waiting for
  // each and clearing it.
  template <typename Proto, typename T>
  __device__ __forceinline__ bool receive(WaitCtx& wait, uint4* src, size_t o0, size_t end,
                                          size_t stride, T* recv, size_t first, size_t count,
                                          int peer, unsigned long long step) {
    return receiveRange<Proto, T>(c, src, o0, end, stride, recv, first, count, l.aligned,
                                  l.push_batch, peer, step, wait);
  }
  // Waits for the Q consecutive entries at x (written by rank `peer`, raw fp32 words), hands
  // their data to out and clears them. False once the call gave up. `peer` by reference: it is
  // read only to report a timeout.
  template <typename Proto, int Q>
  __device__ __forceinline__ bool take(WaitCtx& wait, uint4* x, uint32_t flag, const int& peer,
                                       unsigned long long step, uint4 (&out)[Q]) {
    typename Proto::Raw t[Q];
#pragma unroll
    for (int h = 0; h < Q; ++h) t[h] = Proto::load(x + h);
    unsigned spins = 0;
    while (!wait.failed) {
      bool all = true;
#pragma unroll
      for (int h = 0; h < Q; ++h) {
        if (!Proto::template arrived<float>(t[h], flag)) {
          all = false;
          t[h] = Proto::load(x + h);
        }
      }
      if (all || !keepWaiting(wait, spins, c, peer, step)) break;
    }
    if (wait.failed) return false;
#pragma unroll
    for (int h = 0; h < Q; ++h) {
      out[h] = Proto::data(t[h]);
      Proto::clear(x + h);
    }
    return true;
  }
};

// What the one-shot's sessions share: the parameters they load before griddepcontrol.wait (the
// derived constructor loads them, in the order the kernel's code depends on), the block-wide
// epoch read, and a step's flag and slot offset.
struct OneShotCallSession : CallSession {
  size_t slot_bytes;
  RankState* state;

  __device__ OneShotCallSession(const DeviceComm& comm, const LaunchParams& l)
      : CallSession(comm, l) {}
  // Block-wide: reads the epoch. False if the communicator was aborted.
  __device__ __forceinline__ bool open() {
    epoch = readEpoch(state);
    return epoch != ~0ull;
  }
  // Step s's flag and its slot's byte offset (in every rank's slots or outbox).
  __device__ __forceinline__ uint32_t flag(size_t s) const { return stepFlag(epoch + s); }
  __device__ __forceinline__ size_t slotOffset(size_t s) const {
    return ((epoch + s) % kNumSlots) * slot_bytes;
  }

 protected:
  __device__ __forceinline__ void loadWaitParams(const DeviceComm& comm) { state = comm.state; }
};

// The one-shot over a push protocol (sentinel, host sentinel, LL): a rank writes its region of
// every peer's slot and reads every source's region from its own.
template <typename Proto, int kW>
struct OneShotSession : OneShotCallSession {
  static constexpr int kEntry = Proto::kEntry;
  // The slots' base of rank (rank + p) % world, [0] mine: the kernel's array (an array inside
  // the session would keep the whole session in memory until the loops over it are unrolled).
  char* const* peer;

  // rank, world: c.rank, c.world, which the kernel has loaded; bases: the kernel's array.
  __device__ __forceinline__ OneShotSession(const DeviceComm& comm, const LaunchParams& l, int rank,
                                            int world, char* (&bases)[kW])
      : OneShotCallSession(comm, l), peer(bases) {
    slot_bytes = Proto::slotBytes(comm);
#pragma unroll
    for (int p = 0; p < kW; ++p)
      bases[p] = p < world ? Proto::bufs(comm)[(rank + p) % world] : nullptr;
    loadWaitParams(comm);
  }
  // Sends my vector `index` of a step (flag, slot_off: the step's) to every peer's slot, in my
  // region (region: vectors per source).
  __device__ __forceinline__ void send(uint32_t flag, size_t slot_off, int rank, int world,
                                       size_t region, size_t index, const uint4& y) const {
#pragma unroll
    for (int p = 1; p < kW; ++p) {
      if (p >= world) continue;
      uint4* dst = reinterpret_cast<uint4*>(peer[p] + slot_off);
      Proto::put(dst + (rank * region + index) * kEntry, y, flag);
    }
  }
  // After a step's sends (np: the block's sending threads); nothing to do here.
  __device__ __forceinline__ void sent(unsigned, size_t) const {}
  // Before a step's reads (tr of nr: the block's reducing threads); the entries say themselves
  // when they arrive.
  __device__ __forceinline__ bool ready(WaitCtx&, unsigned, unsigned, size_t) {
    return true;
  }
  // Where a step's sources are: source r's region at entries r * sourceStride of sources(s).
  __device__ __forceinline__ uint4* sources(size_t s) const {
    return reinterpret_cast<uint4*>(peer[0] + ((epoch + s) % kNumSlots) * slot_bytes);
  }
  __device__ __forceinline__ size_t sourceStride(size_t region) const {
    return region;
  }
};

// The session the one-shot kernel runs over a protocol (bulk_device.cuh adds BulkProto's).
template <typename Proto, int kW>
struct SessionOf {
  using type = OneShotSession<Proto, kW>;
};

}  // namespace tpcomm
