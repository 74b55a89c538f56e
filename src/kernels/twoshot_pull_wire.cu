// The two-shot pull all-reduce over a quantized wire (issue 37; opt-in: the knob `wire`, or
// TPCOMM_WIRE): twoshot_pull.cu's phases, with every byte that crosses the fabric in the group
// codec of kernels/layout/wire_codec.h (INT8, INT4, FP8 e4m3 or e5m2: 32 elements a group, one
// fp32 scale word each), a kernel per codec (its variant's), over two kinds of outbox (Box): every
// rank's pull outbox in its device memory (PullPhaseProto, p2p_twoshot_pull_<codec>), or its bulk
// outbox in pinned host memory, where GPUs cannot reach each other (HostPullPhaseProto,
// host_twoshot_<codec>). Per step (a chunk of groups, split into one segment per rank):
//   1. every rank encodes its input's part of every peer's segment d into area d of its own outbox
//      (local stores) and publishes phase 0;
//   2. rank d reads segment d's codes from every peer's outbox, decodes them, and sums every rank's
//      values in rank order in fp32 (its own input exact, not encoded); rounds the sum to T and
//      encodes that once into its outbox's reduced area; writes the decoded values, rounded to T,
//      to its output (the bits every peer will decode); publishes phase 1;
//   3. every rank decodes the other segments from their owners' reduced areas into its output.
// So every rank ends with the same bits. A thread owns whole groups (kWireGroup elements: 4
// vectors of bf16/fp16, 8 of fp32), the same offsets of every segment in every step
// (chunk_layout.h, in groups), so the flags and the in-place argument are twoshot_pull.cu's, in
// host memory as in peer memory (bulk_device.cuh has the host outboxes' second flag set).
// What the error can be: docs/PROTOCOL.md, "The quantized wire's codec".
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/pull_device.cuh"
#include "kernels/device/wire_device.cuh"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

// chunk_vecs unused: the codec's slot sets the chunk.
template <typename T, int kW, WireCodec kC, template <int> class Box>
__global__ void __launch_bounds__(kThreadsPerBlock)
    twoShotPullWireKernel(TPCOMM_ALL_REDUCE_PARAMS(T)) {
  using Phase0 = Box<0>;
  using Phase1 = Box<1>;
  const int world = c.world, rank = c.rank;
  const WireSlot w = wireSlot(kC, Phase0::slotBytes(c), world + 1);
  const ChunkedCall k = wireCall(c, w, world + 1, count);
  const size_t stride = blockDim.x;
  CallSession session(c, l);
  // Aborted: all of this thread's outputs are poison (poison_device.cuh).
  if (!session.openAndAnnounce<Phase0, T, kW>(wireKind<kC>(), count))
    return poisonWire<T, kC>(c, l, Phase0::slotBytes(c), world + 1, recv, count, 0);
  WaitCtx wait = session.startWaits();
  const bool checker = isPrintChecker();  // the thread that announced: it checks the peers'
  for (size_t step = 0; step < k.nsteps; ++step) {
    const ChunkStep st = session.chunk<Phase0>(k, step);
    char* const mine = Phase0::outbox(c, rank) + st.slot_off;

    // 1. My input's part of every peer's segment d, encoded into area d of my outbox.
    for (int p = 1; p < world; ++p) {
      const int d = ringRank(rank, p, world);
      for (size_t o = st.o0; o < min(st.o1, st.segLen(d)); o += stride) {
        float x[kWireGroup];
        loadGroup<T>(send, st.base + d * st.seg + o, count, l.aligned, x);
        GroupCodes<kC> q;
        const float scale = encodeGroup<kC>(x, &q);
        putGroup<kC>(mine, w, d, o, q, scale);
      }
    }
    bulkPublish<Phase0>(c, blockDim.x, st.epoch);
    if (step == 0 && checker)
      session.checkPeers<Phase0>(wait, session.print<T>(wireKind<kC>(), count));
    if (!pullAwait<0, Phase0>(c, threadIdx.x, blockDim.x, st.epoch, wait)) {
      poisonWire<T, kC>(c, l, Phase0::slotBytes(c), world + 1, recv, count, step);  // gave up
      return;
    }

    // 2. My segment: every rank's values in rank order (mine exact), rounded to T, encoded once
    //    into my reduced area; the decoded values into my output.
    const size_t own_first = st.base + rank * st.seg;
    for (size_t o = st.o0; o < min(st.o1, st.segLen(rank)); o += stride) {
      float acc[kWireGroup];
      sumOwnGroup<T, kC>(
          rank, world, send, own_first + o, count, l.aligned,
          [&](int r, GroupCodes<kC>* q, WireScale* s) {
            *s = readGroup<kC>(Phase0::outbox(c, r) + st.slot_off, w, rank, o, q);
            return true;
          },
          acc);
      GroupCodes<kC> q;
      const WireScale s = encodeReduced<T, kC>(acc, &q);
      putGroup<kC>(mine, w, world, o, q, s.scale);
      storeGroup<T>(recv, own_first + o, count, l.aligned, acc);
    }
    bulkPublish<Phase1>(c, blockDim.x, st.epoch);
    if (step + 1 == k.nsteps) pdlLaunchDependents();
    if (!pullAwait<1, Phase1>(c, threadIdx.x, blockDim.x, st.epoch, wait)) {
      poisonWire<T, kC>(c, l, Phase0::slotBytes(c), world + 1, recv, count, step);
      return;
    }

    // 3. Every other segment, decoded from its owner's reduced area.
    for (int p = 1; p < world; ++p) {
      const int d = ringRank(rank, p, world);
      const char* slot = Phase0::outbox(c, d) + st.slot_off;
      for (size_t o = st.o0; o < min(st.o1, st.segLen(d)); o += stride) {
        GroupCodes<kC> q;
        const WireScale s = readGroup<kC>(slot, w, world, o, &q);
        float y[kWireGroup];
#pragma unroll
        for (int i = 0; i < kWireGroup; ++i) y[i] = decodeOne<kC>(q, s, i);
        storeGroup<T>(recv, st.base + d * st.seg + o, count, l.aligned, y);
      }
    }
  }
  session.close(k.nsteps);
}

template <WireCodec kC, template <int> class Box>
TPCOMM_KERNEL_ENTRY(TwoShotPullWire, twoShotPullWireKernel<T, kW, kC, Box>);

template <WireCodec kC>
KernelSet peerWireKernels() {
  return kernelSetFor<TwoShotPullWire<kC, PullPhaseProto>, PullProto, kMaxRanks>();
}
template <WireCodec kC>
KernelSet hostWireKernels() {
  return kernelSetFor<TwoShotPullWire<kC, HostPullPhaseProto>, HostPullPhaseProto<0>, kMaxRanks>();
}

}  // namespace

// One kernel a datatype serves every world: the kernel keeps no per-peer registers (the world
// class only bounds the fingerprint's announce), and three classes would triple the fat binary's
// build for nothing.
KernelSet pullTwoShotInt8Kernels(int) {
  return peerWireKernels<WireCodec::kInt8>();
}
KernelSet pullTwoShotInt4Kernels(int) {
  return peerWireKernels<WireCodec::kInt4>();
}
KernelSet pullTwoShotFp8Kernels(int) {
  return peerWireKernels<WireCodec::kFp8E4M3>();
}
KernelSet pullTwoShotFp8E5m2Kernels(int) {
  return peerWireKernels<WireCodec::kFp8E5M2>();
}
KernelSet hostTwoShotInt8Kernels(int) {
  return hostWireKernels<WireCodec::kInt8>();
}
KernelSet hostTwoShotInt4Kernels(int) {
  return hostWireKernels<WireCodec::kInt4>();
}
KernelSet hostTwoShotFp8Kernels(int) {
  return hostWireKernels<WireCodec::kFp8E4M3>();
}
KernelSet hostTwoShotFp8E5m2Kernels(int) {
  return hostWireKernels<WireCodec::kFp8E5M2>();
}

}  // namespace tpcomm
