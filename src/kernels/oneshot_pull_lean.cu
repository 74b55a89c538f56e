// The pull one-shot's latency path: the same call as oneShotKernel over the pull protocol
// (oneshot.cu, pull_device.cuh) when it is one step of whole vectors in 16-byte-aligned buffers
// with at most one vector per thread (leanFits, src/plan/planner.cc). Same outbox slot, entries,
// flags, epoch bookkeeping and summation order as the general kernel, so a rank running it pairs
// with a peer running the general one (alignment is per rank); what is gone is the general
// kernel's step and batch loops and tail paths, as in the push lean kernel (oneshot_lean.cu).
// The block barrier that counts the block in (arriveBlock) also orders every thread's store into
// the outbox before thread 0's fence and flag, so publishing costs no barrier of its own.
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/poison_device.cuh"
#include "kernels/device/pull_device.cuh"
#include "kernels/lean_kernels.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

// chunk_vecs unused: the host applies the step size, in l.call_*.
template <typename Proto, typename T, int kW>
__global__ void __launch_bounds__(kThreadsPerBlock)
    oneShotPullLeanKernel(TPCOMM_ALL_REDUCE_PARAMS(T)) {
  constexpr int E = VecTraits<T>::kElems;
  const size_t nvec = count / E;  // whole vectors only (the host checks)
  const size_t per = l.call_per;  // one step, per <= blockDim.x (the host checks)
  const size_t v = blockIdx.x * per + threadIdx.x;
  const bool has = threadIdx.x < per && v < nvec;
  const int world = c.world;
  const size_t slot_bytes = c.pull_slot_bytes;
  char* src[kW];  // every rank's outbox, in rank order
#pragma unroll
  for (int r = 0; r < kW; ++r) src[r] = r < world ? c.pulls[r] : nullptr;
  char* const mine = c.pulls[c.rank];
  const uint4* in = reinterpret_cast<const uint4*>(send) + v;
  if (has) asm volatile("prefetch.global.L2 [%0];" ::"l"(in));  // why: oneshot_lean.cu
  CallSession session(c, l);

  pdlWait();
  const uint4 x = has ? *in : make_uint4(0, 0, 0, 0);
  session.openThread();
  const bool aborted = session.aborted();
  const size_t slot_off = (session.epoch % kNumSlots) * slot_bytes;
  // The checker: an extra warp's thread where the block has one (launch.cu), as in the push
  // lean kernel, so its wait for the peers' records runs beside the flag waits.
  const bool checker =
      blockIdx.x == 0 && (blockDim.x > per ? threadIdx.x == blockDim.x - 1 : threadIdx.x == 0);
  if (checker && !aborted) session.announce<Proto, kW>(session.print<T>(kCallAllReduce, count));
  if (has && !aborted) Proto::put(reinterpret_cast<uint4*>(mine + slot_off) + v, canon<T>(x), 0);
  if (!session.arriveBlock(aborted)) {  // aborted before this call: its output is the poison
    if (has) reinterpret_cast<uint4*>(recv)[v] = poisonVec();
    return;
  }
  publishFlag<Proto>(c, session.epoch);
  pdlLaunchDependents();
  WaitCtx wait = session.startWaits();
  if (checker) session.checkPeers<Proto>(wait, session.print<T>(kCallAllReduce, count));
  const bool ok = pullAwait<0>(c, threadIdx.x, blockDim.x, session.epoch, wait);
  if (has) {
    // One store site for the sum and the poison (gave up waiting), as in oneshot_lean.cu. The
    // outboxes are mapped whether or not the flags came, so summing them on failure is harmless.
    uint4 y[1];
    pullSum<T, kW, 1>(c, src, slot_off / kVecBytes, v, 1, nvec, send, v, count, l.aligned, y);
    reinterpret_cast<uint4*>(recv)[v] = ok ? y[0] : poisonVec();
  }
  if (!ok) return;
  session.close(1);
}

TPCOMM_KERNEL_ENTRY(OneShotPullLean, oneShotPullLeanKernel<Proto, T, kW>);

}  // namespace

KernelSet leanPullOneShotKernels(int world) {
  return kernelSetByWorld<OneShotPullLean, PullProto>(world);
}

}  // namespace tpcomm
