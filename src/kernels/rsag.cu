// Reduce-scatter and all-gather: the two halves of the two-shot (twoshot_device.cuh), each on its
// own, over the two-shot's slot layout and protocols (peer memory: sentinel; host memory: LL).
// `count` is the per-rank count: reduce-scatter's input and all-gather's output hold world runs
// of it, one per rank (segmentedCall, chunk_layout.h, steps through every run at once). The waits
// are the one-shot's shape (every rank pushes to and reads from every peer in each step), so the
// slot-reuse argument of docs/PROTOCOL.md holds as it does there.
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/poison_device.cuh"
#include "kernels/device/twoshot_device.cuh"
#include "kernels/layout/chunk_layout.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

// kScatter: reduce-scatter, rank r's output is run r of every rank's input summed in rank order;
// else all-gather, run r of every rank's output is rank r's input, bit for bit.
template <typename Proto, typename T, int kW, bool kScatter>
__global__ void __launch_bounds__(kThreadsPerBlock) rsagKernel(TPCOMM_ALL_REDUCE_PARAMS(T)) {
  constexpr int E = VecTraits<T>::kElems;
  constexpr CallKind kKind = kScatter ? kCallReduceScatter : kCallAllGather;
  const ChunkedCall k =
      segmentedCall(slotVecs<Proto>(c), c.world, (count + E - 1) / E, chunk_vecs, gridDim.x);
  const size_t stride = blockDim.x;
  CallSession session(c, l);
  // Reduce-scatter's outputs are its own run, all-gather's every rank's.
  const int runs = kScatter ? 1 : c.world;
  // Aborted: all of this thread's outputs are poison (poison_device.cuh).
  if (!session.openAndAnnounce<Proto, T, kW>(kKind, count))
    return poisonSegmentSteps<T>(segmentStepOffsets(k, 0, blockIdx.x, threadIdx.x), runs, recv,
                                 count, l.aligned);
  WaitCtx wait = session.startWaits();
  const bool checker = isPrintChecker();  // the thread that announced: it checks the peers'
  for (size_t step = 0; step < k.nsteps; ++step) {
    const SegmentStep st = session.segment<Proto>(k, step);
    const uint32_t flag = stepFlag(st.epoch);
    uint4* mine = reinterpret_cast<uint4*>(Proto::bufs(c)[c.rank] + st.slot_off);
    if constexpr (kScatter) {
      const Segments<const T> in{send, count, st.first, 0, count, st.len, st.len};
      scatterPush<Proto, T>(c, l, st.slot_off, k.seg_cap, st.o0, st.o1, stride, flag, in);
      if (step == 0 && checker) session.checkPeers<Proto>(wait, session.print<T>(kKind, count));
      if (!reduceOwn<Proto, T, kW>(session, wait, mine, k.seg_cap, st.o0, st.o1, stride, in,
                                   st.epoch, [&](size_t o, const uint4& y) {
                                     storeVec<T>(recv, st.first + o, count, l.aligned, y);
                                   })) {
        // Timed out: this step's outputs and the later ones' are poison (poison_device.cuh).
        poisonSegmentSteps<T>(st, runs, recv, count, l.aligned);
        return;
      }
      if (step + 1 == k.nsteps) pdlLaunchDependents();
    } else {
      const Segments<const T> in{send, 0, st.first, 0, count, st.len, st.len};
      const Segments<T> out{recv, count, st.first, 0, count, st.len, st.len};
      gatherPush<Proto, T>(c, l, st.slot_off, k.seg_cap, st.o0, st.o1, stride, flag, in, out);
      if (step == 0 && checker) session.checkPeers<Proto>(wait, session.print<T>(kKind, count));
      if (step + 1 == k.nsteps) pdlLaunchDependents();
      if (!gatherReceive<Proto, T>(session, wait, mine, k.seg_cap, st.o0, st.o1, stride, out,
                                   st.epoch)) {
        poisonSegmentSteps<T>(st, runs, recv, count, l.aligned);  // timed out
        return;
      }
    }
  }
  session.close(k.nsteps);
}

template <bool kScatter>
TPCOMM_KERNEL_ENTRY(Rsag, rsagKernel<Proto, T, kW, kScatter>);

}  // namespace

KernelSet reduceScatterKernels(int world) {
  return kernelSetByWorld<Rsag<true>, SentinelProto>(world);
}
KernelSet allGatherKernels(int world) {
  return kernelSetByWorld<Rsag<false>, SentinelProto>(world);
}
KernelSet hostReduceScatterKernels(int world) {
  return kernelSetByWorld<Rsag<true>, LLProto>(world);
}
KernelSet hostAllGatherKernels(int world) {
  return kernelSetByWorld<Rsag<false>, LLProto>(world);
}

}  // namespace tpcomm
