// Two-shot pull all-reduce (twoshot_pull): reduce-scatter then all-gather over the pull protocol
// (pull_device.cuh), where every byte crosses the fabric by a load. Chunked through the outbox
// slots as the push two-shot (twoshot.cu) is through its slots; each chunk is one step:
//   1. every rank copies its input's chunk into its own outbox (area [d] holds segment d) and
//      publishes phase 0;
//   2. rank d reads segment d from every peer's outbox, sums it in rank order with its own input,
//      writes it to its output and to its outbox's reduced area, and publishes phase 1;
//   3. every rank reads the other segments from their owners' reduced areas into its output.
// Block b of every rank owns the same sub-range of every segment (chunk_layout.h), so a block's
// flags cover exactly what its peers' blocks b read, and a thread that reads an input vector is
// the one that later writes that output vector, or it passed a block barrier (the publish) in
// between: in-place calls are safe. Why four slots suffice: docs/PROTOCOL.md, "Pull". The phases
// are twoshot_pull_device.cuh's, which reduce-scatter and all-gather over pull (rsag_pull.cu)
// share. The same kernel runs over the bulk outboxes in pinned host memory (host_twoshot_pull),
// where the GPUs cannot reach each other: there every byte crosses PCIe once each way, 16 data
// bytes an entry, where the host two-shot's LL entries carry 8.
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/twoshot_call_device.cuh"
#include "kernels/device/twoshot_pull_device.cuh"
#include "kernels/layout/chunk_layout.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

// Box: whose outboxes and flags, a phase each (PullPhaseProto: every rank's pull outbox in its
// device memory; HostPullPhaseProto: its bulk outbox in pinned host memory, where GPUs cannot
// reach each other).
template <template <int> class Box, typename T, int kW>
__global__ void __launch_bounds__(kThreadsPerBlock) twoShotPullKernel(TPCOMM_ALL_REDUCE_PARAMS(T)) {
  using Proto = Box<0>;
  const int world = c.world, rank = c.rank;
  const ChunkedCall k = twoShotGeometry<Proto, T, 1, 1>(c, count, chunk_vecs);
  const size_t seg_cap = k.seg_cap, stride = blockDim.x;
  const size_t red = world * seg_cap;  // entry index of the reduced area
  char* src[kW];                       // every rank's outbox, in rank order
#pragma unroll
  for (int r = 0; r < kW; ++r) src[r] = r < world ? Proto::outbox(c, r) : nullptr;
  uint4* const mine = reinterpret_cast<uint4*>(Proto::outbox(c, rank));
  CallSession session(c, l);
  // Aborted: all of this thread's outputs are poison (poison_device.cuh).
  if (!session.openAndAnnounce<Proto, T, kW>(kCallAllReduce, count))
    return poisonTwoShotSteps<Proto, T, 1, 1>(c, l, recv, count, chunk_vecs, 0);
  WaitCtx wait = session.startWaits();
  const bool checker = isPrintChecker();  // the thread that announced: it checks the peers'
  for (size_t step = 0; step < k.nsteps; ++step) {
    const ChunkStep st = session.chunk<Proto>(k, step);
    const size_t slot = st.slot_off / kVecBytes, base = st.base, seg = st.seg;

    // The chunk's segments are consecutive runs of one array (twoshot_device.cuh, Segments).
    const Segments<const T> in{send, 0, base, seg, count, seg, st.len};
    const Segments<T> out{recv, 0, base, seg, count, seg, st.len};

    // 1. My input's share of every peer's segment into my outbox, published.
    pullStage<Proto, T>(c, l, mine + slot, seg_cap, st.o0, st.o1, stride, in);
    bulkPublish<Proto>(c, blockDim.x, st.epoch);
    if (step == 0 && checker)
      session.checkPeers<Proto>(wait, session.print<T>(kCallAllReduce, count));
    if (!pullAwait<0, Proto>(c, threadIdx.x, blockDim.x, st.epoch, wait)) {
      // Gave up: this step's outputs and the later ones' are poison.
      poisonTwoShotSteps<Proto, T, 1, 1>(c, l, recv, count, chunk_vecs, step);
      return;
    }

    // 2. My segment from every rank, in rank order: to my output and my reduced area.
    const size_t own_first = base + rank * seg;  // vector index of my segment's start
    pullReduceOwn<T, kW>(c, l, src, slot, seg_cap, st.o0, st.o1, stride, in,
                         [&](size_t o, const uint4& y) {
                           Proto::put(mine + slot + red + o, y, 0);
                           storeVec<T>(recv, own_first + o, count, l.aligned, y);
                         });
    bulkPublish<Box<1>>(c, blockDim.x, st.epoch);
    if (step + 1 == k.nsteps) pdlLaunchDependents();
    if (!pullAwait<1, Box<1>>(c, threadIdx.x, blockDim.x, st.epoch, wait)) {
      poisonTwoShotSteps<Proto, T, 1, 1>(c, l, recv, count, chunk_vecs, step);
      return;
    }

    // 3. Every other segment from its owner's reduced area.
    pullGather<T, Proto>(c, l, slot + red, st.o0, st.o1, stride, out);
  }
  session.close(k.nsteps);
}

template <template <int> class Box>
TPCOMM_KERNEL_ENTRY(TwoShotPull, twoShotPullKernel<Box, T, kW>);

}  // namespace

KernelSet pullTwoShotKernels(int world) {
  return kernelSetByWorld<TwoShotPull<PullPhaseProto>, PullProto>(world);
}

// Over the bulk outboxes in pinned host memory (host_twoshot_pull): the host two-shot above the
// knob host_ll_bytes, where LL's flag words would double the bytes crossing PCIe.
KernelSet hostPullTwoShotKernels(int world) {
  return kernelSetByWorld<TwoShotPull<HostPullPhaseProto>, HostPullPhaseProto<0>>(world);
}

}  // namespace tpcomm
