// The one-shot's latency path: the same call as oneShotKernel (oneshot.cu) when it is one step of
// whole vectors in 16-byte-aligned buffers and every thread has at most one vector
// (oneShotLeanFits decides; small calls get a thread per vector from planGrid). Same slots,
// entries, epoch bookkeeping and summation order as the general kernel, so a rank running it
// pairs with a peer running the general one; what is gone is the general kernel's code between
// griddepcontrol.wait and the pushes and between the data's arrival and the output: the step and
// batch loops, the tail and unaligned paths, the split. That code was instruction latency on the
// critical path of small calls (docs/BENCHMARKS.md). Sentinel protocols only (peer and host).
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/poison_device.cuh"
#include "kernels/device/session_device.cuh"
#include "kernels/device/trace_device.cuh"
#include "kernels/layout/oneshot_layout.h"  // ringRank
#include "kernels/lean_kernels.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

// chunk_vecs unused: the host applies the step size, in l.call_*.
template <typename Proto, typename T, int kW>
__global__ void __launch_bounds__(kThreadsPerBlock) oneShotLeanKernel(TPCOMM_ALL_REDUCE_PARAMS(T)) {
  KernelTrace trace;  // marks kTraceEntry
  constexpr int E = VecTraits<T>::kElems;
  const size_t nvec = count / E;  // whole vectors only (the host checks)
  // The general kernel's geometry, from the host; one step, and per <= blockDim.x (the host
  // checks).
  const size_t region = l.call_region, per = l.call_per;
  const size_t v = blockIdx.x * per + threadIdx.x;
  const bool has = threadIdx.x < per && v < nvec;
  const int rank = c.rank, world = c.world;
  const size_t slot_bytes = Proto::slotBytes(c);
  CallSession session(c, l);
  // ringRank, not `%`: a 32-bit modulo by the run-time world is a chain of ~20 instructions
  // (reciprocal and corrections) before each peer's base can be loaded, on the critical path
  // wherever the launch is not overlapped with the previous kernel. The general kernel keeps
  // `%`: with ringRank there, the compiler moved its parameter loads behind griddepcontrol.wait.
  char* peer[kW];
#pragma unroll
  for (int p = 0; p < kW; ++p)
    peer[p] = p < world ? Proto::bufs(c)[ringRank(rank, p, world)] : nullptr;
  const uint4* in = reinterpret_cast<const uint4*>(send) + v;
  // Pins the input's address (the `send` and `count` parameters' constant loads: a first touch
  // of their line misses the constant cache) before the wait. With nothing before the wait
  // needing them, the compiler moves those loads behind griddepcontrol.wait, onto the critical
  // path (seen in cuobjdump); an L2 prefetch of the input is a memory operation it keeps in
  // place. Safe before the wait: L2 is where the previous kernel's writes land anyway.
  if (has) asm volatile("prefetch.global.L2 [%0];" ::"l"(in));

  pdlWait();
  trace.mark(kTraceWaited);
  const uint4 x = has ? *in : make_uint4(0, 0, 0, 0);
  // Every thread reads the epoch itself, alongside its input: no barrier between the two loads
  // and the push. A thread that sees the communicator aborted pushes nothing, and leaves at the
  // block's barrier (arriveBlock), as the whole block does then.
  session.openThread();
  const bool aborted = session.aborted();
  trace.mark(kTraceEpoch);
  const size_t slot_off = (session.epoch % kNumSlots) * slot_bytes;
  // The call's fingerprint goes out before the data (print_device.cuh).
  // The checker: block 0's last thread where it has no vector (the launch adds a warp for it),
  // so its wait for the peers' records runs beside the data waits; else thread 0.
  const bool checker =
      blockIdx.x == 0 && (blockDim.x > per ? threadIdx.x == blockDim.x - 1 : threadIdx.x == 0);
  if (checker && !aborted) session.announce<Proto, kW>(session.print<T>(kCallAllReduce, count));
  if (has && !aborted) {
    const uint4 y = canon<T>(x);
#pragma unroll
    for (int p = 1; p < kW; ++p)
      if (p < world)
        Proto::put(reinterpret_cast<uint4*>(peer[p] + slot_off) + rank * region + v, y, 0);
  }
  trace.mark(kTracePushed);
  // Every thread's epoch read has returned (its push, or at least the vote, used it) before
  // thread 0 counts the block in: the last block's advance can then never be read here. Off the
  // critical path: the peers' data is an NVLink trip away.
  if (!session.arriveBlock(aborted)) {  // aborted before this call: its output is the poison
    if (has) reinterpret_cast<uint4*>(recv)[v] = poisonVec();
    return;
  }
  pdlLaunchDependents();
  WaitCtx wait = session.startWaits();
  if (checker) session.checkPeers<Proto>(wait, session.print<T>(kCallAllReduce, count));
  if (has) {
    uint4 y[1];
    uint4* mine = reinterpret_cast<uint4*>(peer[0] + slot_off);
    const bool ok = session.template reduce<Proto, T, kW, 1>(wait, mine, region, v, 1, nvec, send,
                                                             v, count, session.epoch, y);
    // One store site for the sum and the poison (a call that gave up): a select, where a second
    // store on the failure branch cost the success path time (measured: docs/BENCHMARKS.md).
    reinterpret_cast<uint4*>(recv)[v] = ok ? y[0] : poisonVec();
    if (!ok) return;
  }
  trace.mark(kTraceReduced);
  session.close(1);
  trace.mark(kTraceEnd);
  trace.store(session.epoch, rank);
}

TPCOMM_KERNEL_ENTRY(OneShotLean, oneShotLeanKernel<Proto, T, kW>);

}  // namespace

bool readLeanOneShotTrace(int dev, unsigned long long* out) {
  return readUnitTrace(dev, out);
}

KernelSet leanOneShotKernels(int world) {
  return kernelSetByWorld<OneShotLean, SentinelProto>(world);
}
KernelSet leanHostSentinelKernels(int world) {
  return kernelSetByWorld<OneShotLean, HostSentinelProto>(world);
}

}  // namespace tpcomm
