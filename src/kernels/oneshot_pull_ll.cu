// The one-step pull with the flag in the data (p2p_oneshot_pull_ll): each rank writes
// its input, LL-encoded (every 4 data bytes beside the step's 32-bit flag, as LLProto does), into
// its own LL slot with local stores; its peers poll those entries over the fabric until every
// flag word is the step's, and sum in rank order. No barrier, fence or flag between the data and
// its readers: the flag pull (oneshot_pull_lean.cu) pays a system-scope fence, a flag store and
// one more dependent round trip (the flag, then the data). Entries are never cleared: a stale one
// holds an older step's flag (docs/PROTOCOL.md, "Pull with the flag in the data", has why a slot
// is never rewritten while a peer still reads it). The planner takes it for single-step calls up
// to the pull_ll_bytes knob by size alone (the same on every rank: it does not pair with the flag
// kernels), so it takes any alignment and partial last vectors.
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/ll_device.cuh"
#include "kernels/device/poison_device.cuh"
#include "kernels/device/pull_device.cuh"
#include "kernels/layout/pull_ll_layout.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

// The entry's encoding is LLProto's (ll_device.cuh); the halves stay in two arrays here (a and b,
// not LLProto::Raw), the layout the registers were measured with.
__device__ __forceinline__ uint4 llData(const uint4& h0, const uint4& h1) {
  return LLProto::data(LLProto::Raw{h0, h1});
}
__device__ __forceinline__ bool llArrived(const uint4& h0, const uint4& h1, uint32_t flag) {
  return LLProto::arrived<float>(LLProto::Raw{h0, h1}, flag);
}

// The poison for a kernel that finds the communicator aborted at entry, out of line: inlined, its
// storeVec cost the 2-rank success path registers (docs/BENCHMARKS.md, "The numbers behind the
// defaults in the code").
template <typename T>
__device__ __noinline__ void poisonOutput(T* recv, size_t v, size_t count, bool aligned) {
  storeVec<T>(recv, v, count, aligned, poisonVec());
}

// chunk_vecs unused: one step (the host checks).
template <typename Proto, typename T, int kW>
__global__ void __launch_bounds__(kThreadsPerBlock)
    oneShotPullLLKernel(TPCOMM_ALL_REDUCE_PARAMS(T)) {
  constexpr int E = VecTraits<T>::kElems;
  const size_t nvec = (count + E - 1) / E;  // a partial last vector included
  const size_t per = l.call_per;            // per <= blockDim.x (the host checks)
  const size_t v = blockIdx.x * per + threadIdx.x;
  const bool has = threadIdx.x < per && v < nvec;
  const int rank = c.rank, world = c.world;
  const size_t area = pullLLAreaOffset(c.pull_slot_bytes);
  const char* src[kW];  // every rank's LL area, in rank order
#pragma unroll
  for (int r = 0; r < kW; ++r) src[r] = r < world ? c.pulls[r] + area : nullptr;
  char* const mine = c.pulls[rank] + area;
  const size_t h0 = pullLLHalfOffset(v, 0), h1 = pullLLHalfOffset(v, 1);
  // Pins the input's address before the wait (why: oneshot_lean.cu); any alignment will do.
  if (has) asm volatile("prefetch.global.L2 [%0];" ::"l"(send + v * E));
  CallSession session(c, l);

  pdlWait();
  // Every thread loads (zeros past the call; a checker-warp thread may load a vector of the next
  // block, unused): loaded under `has`, the vector went to local memory across the waits' calls
  // (ptxas, 16-bit types at world 2).
  const uint4 x = canon<T>(loadVec<T>(send, v, count, l.aligned));
  session.openThread();
  const bool aborted = session.aborted();
  const uint32_t flag = stepFlag(session.epoch);
  const size_t slot = (session.epoch % kNumSlots) * kPullLLSlotBytes;
  const bool checker =
      blockIdx.x == 0 && (blockDim.x > per ? threadIdx.x == blockDim.x - 1 : threadIdx.x == 0);
  if (checker && !aborted) session.announce<Proto, kW>(session.print<T>(kCallAllReduce, count));
  if (has && !aborted) {
    // Each half one 16-byte store, so that a {data, flag} pair lands whole (the PTX model
    // promises 4-byte words; docs/PROTOCOL.md says what a torn read can look like).
    storeVolatile16(reinterpret_cast<uint4*>(mine + slot + h0), LLProto::pack(x, 0, flag));
    storeVolatile16(reinterpret_cast<uint4*>(mine + slot + h1), LLProto::pack(x, 1, flag));
  }
  if (!session.arriveBlock(aborted)) {  // aborted before this call: its output is the poison
    if (has) poisonOutput<T>(recv, v, count, l.aligned);
    return;
  }
  pdlLaunchDependents();
  WaitCtx wait = session.startWaits();
  if (checker) session.checkPeers<Proto>(wait, session.print<T>(kCallAllReduce, count));
  if (has) {
    // Every peer's two halves; mine stays in x. My entry and those past the world stay unset and
    // are never read (zeroing them cost the same local-memory spill as above).
    uint4 a[kW], b[kW];
#pragma unroll
    for (int r = 0; r < kW; ++r) {
      if (r >= world || r == rank) continue;
      a[r] = loadVolatile(reinterpret_cast<const uint4*>(src[r] + slot + h0));
      b[r] = loadVolatile(reinterpret_cast<const uint4*>(src[r] + slot + h1));
    }
    // Re-poll only the peers still missing; a peer that never comes is named in the timeout.
    unsigned spins = 0;
    while (!wait.failed) {
      int missing = -1;
#pragma unroll
      for (int r = 0; r < kW; ++r) {
        if (r >= world || r == rank || llArrived(a[r], b[r], flag)) continue;
        missing = r;
        a[r] = loadVolatile(reinterpret_cast<const uint4*>(src[r] + slot + h0));
        b[r] = loadVolatile(reinterpret_cast<const uint4*>(src[r] + slot + h1));
      }
      if (missing < 0 || !keepWaiting(wait, spins, c, missing, session.epoch)) break;
    }
    // Gave up: this rank's own vector turns NaN, so the sum is NaN (fp32 NaN + anything), and the
    // one store below writes it: no second store site on the success path.
    const uint4 own = wait.failed ? poisonVec() : x;
    Acc<T> acc;  // rank order, fp32: the bits of every other variant
    acc.set(rank == 0 ? own : llData(a[0], b[0]));
#pragma unroll
    for (int r = 1; r < kW; ++r)
      if (r < world) acc.add(r == rank ? own : llData(a[r], b[r]));
    storeVec<T>(recv, v, count, l.aligned, acc.result());
  }
  if (wait.failed) return;
  session.close(1);
}

TPCOMM_KERNEL_ENTRY(OneShotPullLL, oneShotPullLLKernel<Proto, T, kW>);

}  // namespace

// PullProto for the fingerprints (its print arrays); the entries are this file's.
KernelSet pullLLOneShotKernels(int world) {
  return kernelSetByWorld<OneShotPullLL, PullProto>(world);
}

}  // namespace tpcomm
