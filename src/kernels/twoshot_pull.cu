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
// between: in-place calls are safe. Why four slots suffice: docs/PROTOCOL.md, "Pull".
#include "kernels/algo_launch.h"
#include "kernels/chunk_layout.h"
#include "kernels/kernel_set.cuh"
#include "kernels/pull_device.cuh"

namespace tpcomm {
namespace {

template <typename Proto, typename T, int kW>
__global__ void __launch_bounds__(kThreadsPerBlock)
    twoShotPullKernel(const __grid_constant__ DeviceComm c, const T* send, T* recv, size_t count,
                      size_t chunk_vecs) {
  constexpr int E = VecTraits<T>::kElems;
  const int world = c.world, rank = c.rank;
  // A slot: world areas of seg_cap entries (my chunk by segment), then the reduced area.
  const ChunkedCall k =
      chunkedCall(slotVecs<Proto>(c), world + 1, world, (count + E - 1) / E, chunk_vecs, gridDim.x);
  const size_t seg_cap = k.seg_cap, stride = blockDim.x;
  const size_t red = world * seg_cap;  // entry index of the reduced area
  char* src[kW];                       // every rank's outbox, in rank order
#pragma unroll
  for (int r = 0; r < kW; ++r) src[r] = r < world ? c.pulls[r] : nullptr;
  uint4* const mine = reinterpret_cast<uint4*>(c.pulls[rank]);
  CallSession session(c);
  if (!session.openAndAnnounce<Proto, T, kW>(kCallAllReduce, count)) return;  // aborted
  WaitCtx wait = session.startWaits();
  const bool checker = isPrintChecker();  // the thread that announced: it checks the peers'
  for (size_t step = 0; step < k.nsteps; ++step) {
    const ChunkStep st =
        chunkStep(k, session.epoch, step, Proto::slotBytes(c), blockIdx.x, threadIdx.x);
    const size_t slot = st.slot_off / kVecBytes, base = st.base, seg = st.seg;
    const size_t o0 = st.o0, o1 = st.o1;

    // 1. My input's share of every peer's segment into my outbox, published.
    for (int p = 1; p < world; ++p) {
      const int d = ringRank(rank, p, world);
      pushRange<Proto, T>(c, send, base + d * seg, o0, min(o1, st.segLen(d)), stride, count,
                          mine + slot + d * seg_cap, 0);
    }
    bulkPublish<Proto>(c, blockDim.x, st.epoch);
    if (step == 0 && checker)
      session.checkPeers<Proto>(wait, session.print<T>(kCallAllReduce, count));
    if (!pullAwait<0>(c, threadIdx.x, blockDim.x, st.epoch, wait)) return;

    // 2. My segment from every rank, in rank order: to my output and my reduced area.
    const size_t own_end = min(o1, st.segLen(rank));
    const size_t own_first = base + rank * seg;  // vector index of my segment's start
    constexpr int R = kReduceBatch;
    for (size_t o = o0; o < own_end; o += stride * R) {
      uint4 y[R];
      pullSum<T, kW, R>(c, src, slot + rank * seg_cap, o, stride, own_end, send, own_first + o,
                        count, y);
#pragma unroll
      for (int u = 0; u < R; ++u) {
        if (o + u * stride >= own_end) continue;
        Proto::put(mine + slot + red + o + u * stride, y[u], 0);
        storeVec<T>(recv, own_first + o + u * stride, count, c.aligned, y[u]);
      }
    }
    bulkPublish<PullPhaseProto<1>>(c, blockDim.x, st.epoch);
    if (step + 1 == k.nsteps) pdlLaunchDependents();
    if (!pullAwait<1>(c, threadIdx.x, blockDim.x, st.epoch, wait)) return;

    // 3. Every other segment from its owner's reduced area.
    for (int p = 1; p < world; ++p) {
      const int d = ringRank(rank, p, world);
      const uint4* from = reinterpret_cast<const uint4*>(c.pulls[d]) + slot + red;
      const size_t end = min(o1, st.segLen(d));
      for (size_t o = o0; o < end; o += stride * kPushBatch) {
        uint4 z[kPushBatch];  // the batch's loads in flight together: each is a fabric round trip
#pragma unroll
        for (int u = 0; u < kPushBatch; ++u)
          if (o + u * stride < end) z[u] = loadVolatile(from + o + u * stride);
#pragma unroll
        for (int u = 0; u < kPushBatch; ++u)
          if (o + u * stride < end)
            storeVec<T>(recv, base + d * seg + o + u * stride, count, c.aligned, z[u]);
      }
    }
  }
  session.close(k.nsteps);
}

struct TwoShotPull {
  template <typename Proto, typename T, int kW>
  static const void* get() {
    return reinterpret_cast<const void*>(&twoShotPullKernel<Proto, T, kW>);
  }
};

}  // namespace

KernelSet pullTwoShotKernels(int world) {
  return kernelSetByWorld<TwoShotPull, PullProto>(world);
}

}  // namespace tpcomm
