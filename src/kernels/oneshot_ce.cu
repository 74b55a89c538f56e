// The copy-engine one-shot (oneshot_ce): a rank's input crosses the fabric by peer copies in the
// call's stream (memcpy nodes in a graph), not by a kernel's stores; this kernel only waits and
// reduces. One step of the call, as the host enqueues it (comm/call/ce_steps.cc,
// comm/call/ce_copies.cc):
//   guard     this kernel with kCeGuardOp, one block: waits (bounded) until every peer has
//             acknowledged the last data this rank copied into the landing slot the step reuses,
//             then sets the flag word its flag copies carry (the step epoch + 1, or no flag if the
//             wait failed)
//   copies    my input into every peer's landing slot, my region; then my flag word into every
//             peer's CeControl::flag[slot][me], after all data copies in stream order
//   wait      this kernel with kCeWaitOp, one block: the call's fingerprints, then waits (bounded)
//             for every peer's flag of this step; a failure aborts the communicator
//   reduce    this kernel, the call's grid, waiting for nothing: sums every rank's data in rank
//             order, writes the output, then acknowledges to every peer
// Only one-block kernels wait: with ranks sharing a GPU, a peer's copies are same-device copies
// that may run on the SMs, and a wide grid spinning on every SM kept them from starting.
// The slot is chosen by the host (a copy's addresses are fixed once captured), so the guard's
// acknowledgement wait, not the epoch, is what keeps a fast rank from overwriting a region a slow
// one still reads; the epoch (in device memory, as for every kernel) is what makes a replayed
// flag differ from the last replay's. Why the flag's arrival implies the data's: docs/PROTOCOL.md,
// "Copy engines".
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/poison_device.cuh"
#include "kernels/device/session_device.cuh"
#include "kernels/layout/ce_layout.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

__device__ __forceinline__ unsigned long long loadAcquireSys(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void storeRelaxedSys(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// The guard's wait for peer p's acknowledgement of slot `slot` up to `need`. Unlike the data
// waits it does not stop when the communicator is aborted: the copies that follow it cannot be
// skipped, and a live peer may still be reading the region they overwrite. It stops at the
// deadline (the peer is dead or stuck: reported, and never waited for again).
__device__ __forceinline__ bool waitAck(const DeviceComm& c, CeControl* mine, int slot, int p,
                                        unsigned long long need, unsigned long long epoch) {
  const unsigned long long* ack = &mine->ack[slot][p];
  unsigned long long deadline = 0;
  for (unsigned spins = 1; loadAcquireSys(ack) < need; ++spins) {
    if ((spins & 255u) != 0) continue;
    const unsigned long long now = globalTimerNs();
    if (deadline == 0) {
      deadline = now + c.timeout_ns;
    } else if (now > deadline) {
      reportTimeout(c, p, epoch);
      atomicOr(&mine->released, 1u << p);
      return false;
    }
  }
  return true;
}

// One block of at least `world` threads: thread p waits for peer p.
__device__ void ceGuard(const DeviceComm& c, int slot) {
  pdlWait();  // the epoch is the previous kernel's last write
  CeControl* mine = ceControl(c.ce[c.rank]);
  const volatile RankState* st = c.state;
  const unsigned long long epoch = st->epoch;
  const bool aborted = st->abort != 0u;
  const unsigned long long need =
      *reinterpret_cast<volatile unsigned long long*>(&mine->sent[slot]);
  const int p = static_cast<int>(threadIdx.x);
  bool ok = true;
  if (p < c.world && p != c.rank && need != 0 &&
      ((*reinterpret_cast<volatile unsigned*>(&mine->released) >> p) & 1u) == 0)
    ok = waitAck(c, mine, slot, p, need, epoch);
  const bool all = __syncthreads_and(ok);
  if (threadIdx.x == 0) {
    // An aborted rank's flags never match, so its peers time out rather than read what its
    // later copies bring; the data copies still land, into regions nobody reads any more.
    mine->flag_src = all && !aborted ? ceStepMark(epoch) : kCeNoFlag;
    mine->sent[slot] = ceStepMark(epoch);
  }
}

// The reader's acknowledgement of this step's slot to every peer (one thread).
__device__ __forceinline__ void acknowledge(const DeviceComm& c, int slot,
                                            unsigned long long mark) {
  for (int q = 0; q < c.world; ++q)
    if (q != c.rank) storeRelaxedSys(&ceControl(c.ce[q])->ack[slot][c.rank], mark);
}

// Thread 0 waits for every peer's flag of this step (a timeout aborts the communicator).
__device__ __forceinline__ void waitForFlags(const DeviceComm& c, WaitCtx& wait, CeControl* mine,
                                             int slot, unsigned long long epoch) {
  if (threadIdx.x == 0 && !wait.failed) {
    const unsigned long long want = ceStepMark(epoch);
    for (int q = 0; q < c.world && !wait.failed; ++q) {
      if (q == c.rank) continue;
      unsigned spins = 0;
      while (loadAcquireSys(&mine->flag[slot][q]) != want) {
        if (keepWaiting(wait, spins, c, q, epoch)) continue;
        // q timed out (not merely an abort seen): dead or stuck, so no guard waits for it again.
        if (wait.deadline != 0 && globalTimerNs() > wait.deadline)
          atomicOr(&mine->released, 1u << q);
        break;
      }
    }
  }
}

// One block: the checker exchanges the call's fingerprints, then every peer's flag of this step
// must arrive. Every way this gives up (a timeout, a disagreeing call, an abort seen) leaves the
// communicator aborted, which is how the reduce kernel after it learns of it. Then it also leaves
// the step's output NaN (poison_device.cuh), since the reduce kernel, finding the communicator
// aborted, writes nothing (nothing else sets the abort word between the two: one call at a time,
// in stream order); the reduce kernel's code stays as it was.
template <typename T, int kW>
__device__ void ceWait(const DeviceComm& c, const LaunchParams& l, T* recv, size_t count,
                       int slot) {
  constexpr int E = VecTraits<T>::kElems;
  CallSession session(c, l);
  if (!session.openReadOnly()) {  // aborted: the reduce kernel acknowledges for good
    poisonRange<T>(recv, 0, threadIdx.x, (count + E - 1) / E, blockDim.x, count, l.aligned);
    return;
  }
  const bool checker = isPrintChecker();
  const PrintWords call = session.print<T>(kCallAllReduce, count);
  if (checker) session.announce<SentinelProto, kW>(call);
  WaitCtx wait = session.startWaits();
  if (checker) session.checkPeers<SentinelProto>(wait, call);
  waitForFlags(c, wait, ceControl(c.ce[c.rank]), slot, session.epoch);
  // Giving up is thread 0's (the checker's check, its wait for the flags): it poisons the whole
  // step alone, since a barrier handing its flag to the block would cost every call.
  if (wait.failed) poisonRange<T>(recv, 0, 0, (count + E - 1) / E, 1, count, l.aligned);
}

template <typename T, int kW>
__global__ void __launch_bounds__(kThreadsPerBlock)
    oneShotCeKernel(const __grid_constant__ DeviceComm c, const __grid_constant__ LaunchParams l,
                    const T* send, T* recv, size_t count, size_t op) {
  const int slot = static_cast<int>(op & kCeSlotMask);
  if (op & kCeGuardOp) {
    ceGuard(c, slot);
    return;
  }
  if (op & kCeWaitOp) {
    ceWait<T, kW>(c, l, recv, count, slot);
    return;
  }
  CallSession session(c, l);
  pdlWait();
  if (!session.openArrived()) {
    // Aborted (the wait kernel gave up, or an earlier call did): this rank reads nothing from now
    // on, so no peer's guard must wait for it.
    if (blockIdx.x == 0 && threadIdx.x == 0) acknowledge(c, slot, kCeAckForever);
    return;
  }
  CeControl* mine = ceControl(c.ce[c.rank]);
  // The wait kernel before this one saw every peer's flag of the step, so the data is in place.
  // Every rank's data in rank order (mine from my input), summed in fp32: bit-identical on
  // every rank. Landing data is read volatile: the copy engine wrote it behind the L1.
  constexpr int E = VecTraits<T>::kElems;
  const size_t nvec = (count + E - 1) / E;
  const size_t region = l.call_region * kVecBytes;  // a source's region (set by the host)
  const bool aligned = l.aligned != 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t v = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < nvec;
       v += stride) {
    Acc<T> acc;
#pragma unroll
    for (int r = 0; r < kW; ++r) {
      if (r >= c.world) continue;
      const uint4 x = r == c.rank ? loadVec<T>(send, v, count, aligned)
                                  : loadVolatile(reinterpret_cast<const uint4*>(ceLanding(
                                                     c.ce[c.rank], c.slot_bytes, slot, r, region)) +
                                                 v);
      if (r == 0)
        acc.set(x);
      else
        acc.add(x);
    }
    storeVec<T>(recv, v, count, aligned, acc.result());
  }
  // The last block done reading acknowledges (every block's loads have returned: their values
  // were stored), then advances the epoch.
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const bool last = gridDim.x == 1 || atomicAdd(&mine->finished, 1u) == gridDim.x - 1;
    if (last) {
      if (gridDim.x > 1) mine->finished = 0u;
      __threadfence_system();
      const bool aborted = *reinterpret_cast<volatile unsigned*>(&c.state->abort) != 0u;
      acknowledge(c, slot, aborted ? kCeAckForever : ceStepMark(session.epoch));
    }
  }
  session.close(1);
}

TPCOMM_KERNEL_ENTRY(OneShotCe, oneShotCeKernel<T, kW>);

}  // namespace

KernelSet oneShotCeKernels(int world) {
  return kernelSetByWorld<OneShotCe, SentinelProto>(world);
}

}  // namespace tpcomm
