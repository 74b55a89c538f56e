// Two-shot push all-reduce (bandwidth path): reduce-scatter then all-gather, chunked through the
// staging slots so the message size is not capped by the buffer. Each chunk is one step (one slot),
// its three phases the device functions of twoshot_device.cuh that rsag.cu runs one half of:
//   1. every rank pushes segment d of the chunk into rank d's RS area;
//   2. rank d sums its segment in rank order, writes it to its output and pushes the sum into
//      every peer's AG area;
//   3. every rank copies the other segments from its AG area to its output.
// Block b of every rank owns the same sub-range of every segment, so the three phases of a block
// need no grid-wide barrier, and the thread that reads an input vector is the one that later
// writes that output vector (in-place calls are safe). Arrival is carried by the data, as in the
// one-shot kernel (proto_device.cuh); the call's session (session_device.cuh) holds the epoch
// that rotates the slots and bounds the waits.
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/twoshot_call_device.cuh"
#include "kernels/device/twoshot_device.cuh"
#include "kernels/layout/chunk_layout.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

template <typename Proto, typename T, int kW>
__global__ void __launch_bounds__(kThreadsPerBlock) twoShotKernel(TPCOMM_ALL_REDUCE_PARAMS(T)) {
  const ChunkedCall k = twoShotGeometry<Proto, T, 2, 0>(c, count, chunk_vecs);
  const size_t seg_cap = k.seg_cap;
  const size_t stride = blockDim.x;
  CallSession session(c, l);
  // Aborted: all of this thread's outputs are poison (poison_device.cuh).
  if (!session.openAndAnnounce<Proto, T, kW>(kCallAllReduce, count))
    return poisonTwoShotSteps<Proto, T, 2, 0>(c, l, recv, count, chunk_vecs, 0);
  WaitCtx wait = session.startWaits();
  const bool checker = isPrintChecker();  // the thread that announced: it checks the peers'
  for (size_t step = 0; step < k.nsteps; ++step) {
    const ChunkStep st = session.chunk<Proto>(k, step);
    const uint32_t flag = stepFlag(st.epoch);
    uint4* mine = reinterpret_cast<uint4*>(Proto::bufs(c)[c.rank] + st.slot_off);
    // The chunk's segments: consecutive runs of the one message, in input and output alike.
    const Segments<const T> in{send, 0, st.base, st.seg, count, st.seg, st.len};
    const Segments<T> out{recv, 0, st.base, st.seg, count, st.seg, st.len};

    // 1. Reduce-scatter push: segment d of my input into rank d's RS area.
    scatterPush<Proto, T>(c, l, st.slot_off, seg_cap, st.o0, st.o1, stride, flag, in);
    if (step == 0 && checker)
      session.checkPeers<Proto>(wait, session.print<T>(kCallAllReduce, count));

    // 2. Reduce my segment in rank order; push it to every peer's AG area and write it out.
    if (!reduceOwn<Proto, T, kW>(session, wait, mine, seg_cap, st.o0, st.o1, stride, in, st.epoch,
                                 [&](size_t o, const uint4& y) {
                                   shareOwn<Proto, T>(c, l, st.slot_off, seg_cap, o, y, flag, out);
                                 })) {
      // Timed out: this step's outputs and the later ones' are poison; no block-wide barrier
      // follows.
      poisonTwoShotSteps<Proto, T, 2, 0>(c, l, recv, count, chunk_vecs, step);
      return;
    }
    if (step + 1 == k.nsteps) pdlLaunchDependents();

    // 3. All-gather receive: every other segment, from its owner.
    if (!gatherReceive<Proto, T>(session, wait, mine, seg_cap, st.o0, st.o1, stride, out,
                                 st.epoch)) {
      poisonTwoShotSteps<Proto, T, 2, 0>(c, l, recv, count, chunk_vecs, step);  // timed out
      return;
    }
  }
  session.close(k.nsteps);
}

TPCOMM_KERNEL_ENTRY(TwoShot, twoShotKernel<Proto, T, kW>);

}  // namespace

KernelSet twoShotKernels(int world) {
  return kernelSetByWorld<TwoShot, SentinelProto>(world);
}
KernelSet hostTwoShotKernels(int world) {
  return kernelSetByWorld<TwoShot, LLProto>(world);
}

}  // namespace tpcomm
