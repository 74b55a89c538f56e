// The two-shot push all-reduce over a quantized wire (issue 37; opt-in, as the pull form:
// twoshot_pull_wire.cu): twoshot.cu's phases over the push slots, every byte that crosses the
// fabric in the group codec of kernels/layout/wire_codec.h, a kernel per codec
// (p2p_twoshot_<codec>). Per step (a chunk of groups, one segment per rank; a slot of 2 * world
// areas, wire_codec.h's WireSlot: [0, world) a row per source, [world, 2 * world) a row per owner):
//   1. every rank encodes its input's part of segment d and pushes it into rank d's slot, in its
//      source row;
//   2. rank d waits for every source's codes of its segment, decodes them and sums every rank's
//      values in rank order in fp32 (its own input exact, not encoded); rounds the sum to T and
//      encodes it once; pushes those codes into every peer's slot, in its owner row; writes the
//      decoded values, rounded to T, to its output (the bits every peer will decode);
//   3. every rank waits for the other segments' codes in its owner rows and decodes them into its
//      output.
// Arrival is carried by the data, as in the sentinel protocol (sentinel_device.cuh): the codes
// travel XORed with wireSentinelMask, so no pushed word is the slots' resting state (all ones),
// and the reader puts the resting state back (wire_device.cuh, takeGroup). A thread owns whole
// groups, the same offsets of every segment in every step, so a thread waits only on groups its
// peers' same thread pushed and the in-place argument is twoshot.cu's. No flags, fences or round
// trips: the push form is for fabrics whose posted writes keep their bandwidth (NVLink, and PCIe
// without the write collapse, docs/TOPOLOGY.md). What the error can be: docs/PROTOCOL.md, "The
// quantized wire's codec".
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/wire_device.cuh"
#include "kernels/layout/oneshot_layout.h"  // ringRank
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

// chunk_vecs unused: the codec's slot sets the chunk.
template <typename T, int kW, WireCodec kC>
__global__ void __launch_bounds__(kThreadsPerBlock) twoShotWireKernel(TPCOMM_ALL_REDUCE_PARAMS(T)) {
  constexpr uint32_t kMask = wireSentinelMask(kC);
  const int world = c.world, rank = c.rank;
  const WireSlot w = wireSlot(kC, SentinelProto::slotBytes(c), 2 * world);
  const ChunkedCall k = wireCall(c, w, 2 * world, count);
  const size_t stride = blockDim.x;
  CallSession session(c, l);
  // Aborted: all of this thread's outputs are poison (poison_device.cuh).
  if (!session.openAndAnnounce<SentinelProto, T, kW>(wireKind<kC>(), count))
    return poisonWire<T, kC>(c, l, SentinelProto::slotBytes(c), 2 * world, recv, count, 0);
  WaitCtx wait = session.startWaits();
  const bool checker = isPrintChecker();  // the thread that announced: it checks the peers'
  for (size_t step = 0; step < k.nsteps; ++step) {
    const ChunkStep st = session.chunk<SentinelProto>(k, step);
    char* const mine = c.bufs[rank] + st.slot_off;

    // 1. My input's part of every peer's segment d, encoded into my row of rank d's slot.
    for (int p = 1; p < world; ++p) {
      const int d = ringRank(rank, p, world);
      char* const to = c.bufs[d] + st.slot_off;
      for (size_t o = st.o0; o < min(st.o1, st.segLen(d)); o += stride) {
        float x[kWireGroup];
        loadGroup<T>(send, st.base + d * st.seg + o, count, l.aligned, x);
        GroupCodes<kC> q;
        const float scale = encodeGroup<kC>(x, &q);
        putGroup<kC>(to, w, rank, o, q, scale, kMask);
      }
    }
    if (step == 0 && checker)
      session.checkPeers<SentinelProto>(wait, session.print<T>(wireKind<kC>(), count));

    // 2. My segment: every rank's values in rank order (mine exact), rounded to T, encoded once
    //    into my owner row of every peer's slot; the decoded values into my output.
    const size_t own_first = st.base + rank * st.seg;
    for (size_t o = st.o0; o < min(st.o1, st.segLen(rank)); o += stride) {
      float acc[kWireGroup];
      if (!sumOwnGroup<T, kC>(
              rank, world, send, own_first + o, count, l.aligned,
              [&](int r, GroupCodes<kC>* q, WireScale* s) {
                return takeGroup<kC>(c, wait, mine, w, r, o, r, st.epoch, q, s);
              },
              acc)) {
        // Gave up: this step's outputs and the later ones' are poison.
        poisonWire<T, kC>(c, l, SentinelProto::slotBytes(c), 2 * world, recv, count, step);
        return;
      }
      GroupCodes<kC> q;
      const WireScale s = encodeReduced<T, kC>(acc, &q);
      for (int p = 1; p < world; ++p)
        putGroup<kC>(c.bufs[ringRank(rank, p, world)] + st.slot_off, w, world + rank, o, q, s.scale,
                     kMask);
      storeGroup<T>(recv, own_first + o, count, l.aligned, acc);
    }
    if (step + 1 == k.nsteps) pdlLaunchDependents();

    // 3. Every other segment, decoded from its owner's row of my slot.
    for (int p = 1; p < world; ++p) {
      const int d = ringRank(rank, p, world);
      for (size_t o = st.o0; o < min(st.o1, st.segLen(d)); o += stride) {
        GroupCodes<kC> q;
        WireScale s;
        if (!takeGroup<kC>(c, wait, mine, w, world + d, o, d, st.epoch, &q, &s)) {
          poisonWire<T, kC>(c, l, SentinelProto::slotBytes(c), 2 * world, recv, count, step);
          return;
        }
        float y[kWireGroup];
#pragma unroll
        for (int i = 0; i < kWireGroup; ++i) y[i] = decodeOne<kC>(q, s, i);
        storeGroup<T>(recv, st.base + d * st.seg + o, count, l.aligned, y);
      }
    }
  }
  session.close(k.nsteps);
}

template <WireCodec kC>
TPCOMM_KERNEL_ENTRY(TwoShotWire, twoShotWireKernel<T, kW, kC>);

template <WireCodec kC>
KernelSet pushWireKernels() {
  return kernelSetFor<TwoShotWire<kC>, SentinelProto, kMaxRanks>();
}

}  // namespace

// One kernel a datatype serves every world, as the pull form's (twoshot_pull_wire.cu).
KernelSet twoShotInt8Kernels(int) {
  return pushWireKernels<WireCodec::kInt8>();
}
KernelSet twoShotInt4Kernels(int) {
  return pushWireKernels<WireCodec::kInt4>();
}
KernelSet twoShotFp8Kernels(int) {
  return pushWireKernels<WireCodec::kFp8E4M3>();
}
KernelSet twoShotFp8E5m2Kernels(int) {
  return pushWireKernels<WireCodec::kFp8E5M2>();
}

}  // namespace tpcomm
