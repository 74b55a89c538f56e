// Reduce-scatter and all-gather over the pull protocol: the two halves of the two-shot pull
// (twoshot_pull_device.cuh), each on its own, over its outbox layout (world areas of seg_cap
// entries, then the reduced area), so every byte crosses the fabric by a load, for the fabrics
// whose peer stores collapse (docs/TOPOLOGY.md, "Push or pull over PCIe").
//   reduce-scatter: phase 0 of twoshot_pull: a rank copies its input's runs into its outbox (area
//     d: run d) and publishes; rank d reads run d from every peer's outbox and sums it in rank
//     order with its own input's run d, into its output;
//   all-gather: phase 1: a rank copies its input into its outbox's reduced area (and its output)
//     and publishes; every rank reads every other rank's run from its owner's reduced area.
// `count` is the per-rank count (segmentedCall, chunk_layout.h, steps through every run at once).
// Each step is one write, one publish, one wait and one read, the one-shot pull's shape, so the
// slot-reuse argument of docs/PROTOCOL.md ("Pull") holds as it does there. In place as NCCL has
// it: a rank's own run is read and written by the same thread, its peers read only its outbox.
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/poison_device.cuh"
#include "kernels/device/twoshot_pull_device.cuh"
#include "kernels/layout/chunk_layout.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

// kScatter: reduce-scatter, rank r's output is run r of every rank's input summed in rank order;
// else all-gather, run r of every rank's output is rank r's input, bit for bit.
template <typename Proto, typename T, int kW, bool kScatter>
__global__ void __launch_bounds__(kThreadsPerBlock) rsagPullKernel(TPCOMM_ALL_REDUCE_PARAMS(T)) {
  constexpr int E = VecTraits<T>::kElems;
  constexpr CallKind kKind = kScatter ? kCallReduceScatter : kCallAllGather;
  const ChunkedCall k = segmentedCallIn(slotVecs<Proto>(c), c.world + 1, c.world,
                                        (count + E - 1) / E, chunk_vecs, gridDim.x);
  const size_t stride = blockDim.x;
  const size_t red = c.world * k.seg_cap;  // entry index of the reduced area
  char* src[kW];                           // every rank's outbox, in rank order
#pragma unroll
  for (int r = 0; r < kW; ++r) src[r] = r < c.world ? c.pulls[r] : nullptr;
  uint4* const mine = reinterpret_cast<uint4*>(c.pulls[c.rank]);
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
    const size_t slot = st.slot_off / kVecBytes;
    if constexpr (kScatter) {
      const Segments<const T> in{send, count, st.first, 0, count, st.len, st.len};
      pullStage<Proto, T>(c, l, mine + slot, k.seg_cap, st.o0, st.o1, stride, in);
      bulkPublish<Proto>(c, blockDim.x, st.epoch);
      if (step == 0 && checker) session.checkPeers<Proto>(wait, session.print<T>(kKind, count));
      if (step + 1 == k.nsteps) pdlLaunchDependents();
      if (!pullAwait<0>(c, threadIdx.x, blockDim.x, st.epoch, wait)) {
        // Gave up: this step's outputs and the later ones' are poison (poison_device.cuh).
        poisonSegmentSteps<T>(st, runs, recv, count, l.aligned);
        return;
      }
      pullReduceOwn<T, kW>(
          c, l, src, slot, k.seg_cap, st.o0, st.o1, stride, in,
          [&](size_t o, const uint4& y) { storeVec<T>(recv, st.first + o, count, l.aligned, y); });
    } else {
      const Segments<const T> in{send, 0, st.first, 0, count, st.len, st.len};
      const Segments<T> out{recv, count, st.first, 0, count, st.len, st.len};
      pullShareOwn<Proto, T>(c, l, mine + slot + red, st.o0, st.o1, stride, in, out);
      bulkPublish<PullPhaseProto<1>>(c, blockDim.x, st.epoch);
      if (step == 0 && checker) session.checkPeers<Proto>(wait, session.print<T>(kKind, count));
      if (step + 1 == k.nsteps) pdlLaunchDependents();
      if (!pullAwait<1>(c, threadIdx.x, blockDim.x, st.epoch, wait)) {
        poisonSegmentSteps<T>(st, runs, recv, count, l.aligned);  // gave up
        return;
      }
      pullGather<T>(c, l, slot + red, st.o0, st.o1, stride, out);
    }
  }
  session.close(k.nsteps);
}

template <bool kScatter>
TPCOMM_KERNEL_ENTRY(RsagPull, rsagPullKernel<Proto, T, kW, kScatter>);

}  // namespace

KernelSet pullReduceScatterKernels(int world) {
  return kernelSetByWorld<RsagPull<true>, PullProto>(world);
}
KernelSet pullAllGatherKernels(int world) {
  return kernelSetByWorld<RsagPull<false>, PullProto>(world);
}

}  // namespace tpcomm
