// The two-shot pull all-reduce over a quantized wire (issue 37; opt-in: the knob `wire`, or
// TPCOMM_WIRE): twoshot_pull.cu's phases, with every byte that crosses the fabric in the group
// codec of kernels/layout/wire_codec.h (INT8, INT4, FP8 e4m3 or e5m2: 32 elements a group, one
// fp32 scale word each), a kernel per codec (its variant's). Per step (a chunk of groups, split
// into one segment per rank):
//   1. every rank encodes its input's part of every peer's segment d into area d of its own outbox
//      (local stores) and publishes phase 0;
//   2. rank d reads segment d's codes from every peer's outbox, decodes them, and sums every rank's
//      values in rank order in fp32 (its own input exact, not encoded); rounds the sum to T and
//      encodes that once into its outbox's reduced area; writes the decoded values, rounded to T,
//      to its output (the bits every peer will decode); publishes phase 1;
//   3. every rank decodes the other segments from their owners' reduced areas into its output.
// So every rank ends with the same bits. A thread owns whole groups (kWireGroup elements: 4
// vectors of bf16/fp16, 8 of fp32), the same offsets of every segment in every step
// (chunk_layout.h, in groups), so the flags and the in-place argument are twoshot_pull.cu's.
// What the error can be: docs/PROTOCOL.md, "The quantized wire's codec".
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/poison_device.cuh"
#include "kernels/device/pull_device.cuh"
#include "kernels/layout/chunk_layout.h"
#include "kernels/layout/wire_codec.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

constexpr int kGroupWords = kWireGroup / 4;  // 32-bit words of a group's codes, 8-bit codes

// The codes of one group in registers: 8-bit codes byte by byte (word j: codes 4j..4j+3), 4-bit
// codes nibble by nibble (word j: codes 8j..8j+7, the low nibble first; words 4..7 unused).
template <WireCodec kC>
struct GroupCodes {
  static constexpr int kWords = kC == WireCodec::kInt4 ? kGroupWords / 2 : kGroupWords;
  uint32_t w[kWords];
  __device__ __forceinline__ uint8_t code(int i) const {
    if constexpr (kC == WireCodec::kInt4) {
      return static_cast<uint8_t>((w[i >> 3] >> ((i & 7) * 4)) & 0xFu);
    } else {
      return static_cast<uint8_t>((w[i >> 2] >> ((i & 3) * 8)) & 0xFFu);
    }
  }
};

// Group g of `src` (count elements) as fp32: vectors g*G .. g*G + G - 1, zeros past the end.
template <typename T>
__device__ __forceinline__ void loadGroup(const T* src, size_t g, size_t count, bool aligned,
                                          float (&x)[kWireGroup]) {
  constexpr int E = VecTraits<T>::kElems, G = kWireGroup / E;
#pragma unroll
  for (int v = 0; v < G; ++v) {
    const uint4 q = loadVec<T>(src, g * G + v, count, aligned);
#pragma unroll
    for (int i = 0; i < E; ++i) x[v * E + i] = bitsToFloat<T>(laneBits<T>(q, i));
  }
}

// x rounded to T, as fp32 (what an output element holds).
template <typename T>
__device__ __forceinline__ float roundToT(float x) {
  return bitsToFloat<T>(floatToBits<T>(x));
}

// Group g of the output: the fp32 values rounded to T.
template <typename T>
__device__ __forceinline__ void storeGroup(T* dst, size_t g, size_t count, bool aligned,
                                           const float (&x)[kWireGroup]) {
  constexpr int E = VecTraits<T>::kElems, G = kWireGroup / E;
#pragma unroll
  for (int v = 0; v < G; ++v) {
    uint4 q = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int i = 0; i < E; ++i) setLaneBits<T>(q, i, floatToBits<T>(x[v * E + i]));
    storeVec<T>(dst, g * G + v, count, aligned, q);
  }
}

// x's codes (q) and scale word.
template <WireCodec kC>
__device__ __forceinline__ float encodeGroup(const float (&x)[kWireGroup], GroupCodes<kC>* q) {
  const WireScale s = wireScale(kC, wireScaleOf(x, kWireGroup));
#pragma unroll
  for (int j = 0; j < GroupCodes<kC>::kWords; ++j) q->w[j] = 0;
#pragma unroll
  for (int i = 0; i < kWireGroup; ++i) {
    const uint32_t b = wireEncode(kC, x[i], s);
    if constexpr (kC == WireCodec::kInt4) {
      q->w[i >> 3] |= b << ((i & 7) * 4);
    } else {
      q->w[i >> 2] |= b << ((i & 3) * 8);
    }
  }
  return s.scale;
}

// Element i of q, scaled (s: wireScale of the group's scale word): what every reader gets.
template <WireCodec kC>
__device__ __forceinline__ float decodeOne(const GroupCodes<kC>& q, const WireScale& s, int i) {
  return wireDecode(kC, q.code(i), s);
}

// A group's codes and scale word into group index o of area `area` of a slot of mine: local
// stores.
template <WireCodec kC>
__device__ __forceinline__ void putGroup(char* slot, const WireSlot& w, int area, size_t o,
                                         const GroupCodes<kC>& q, float scale) {
  uint4* to = reinterpret_cast<uint4*>(slot + w.codesAt(area) + o * wireGroupCodeBytes(kC));
  storeVec16(to, make_uint4(q.w[0], q.w[1], q.w[2], q.w[3]));
  if constexpr (kC != WireCodec::kInt4)
    storeVec16(to + 1, make_uint4(q.w[4], q.w[5], q.w[6], q.w[7]));
  reinterpret_cast<float*>(slot + w.scalesAt(area))[o] = scale;
}

// The codes of group o of area `area` of a peer's slot, and what decoding them takes from its
// scale word (volatile loads: a slot is rewritten every kNumSlots steps and must not be served
// from a cache).
template <WireCodec kC>
__device__ __forceinline__ WireScale readGroup(const char* slot, const WireSlot& w, int area,
                                               size_t o, GroupCodes<kC>* q) {
  const uint4* from =
      reinterpret_cast<const uint4*>(slot + w.codesAt(area) + o * wireGroupCodeBytes(kC));
  const uint4 a = loadVolatile(from);
  q->w[0] = a.x, q->w[1] = a.y, q->w[2] = a.z, q->w[3] = a.w;
  if constexpr (kC != WireCodec::kInt4) {
    const uint4 b = loadVolatile(from + 1);
    q->w[4] = b.x, q->w[5] = b.y, q->w[6] = b.z, q->w[7] = b.w;
  }
  return wireScale(
      kC, *reinterpret_cast<const volatile float*>(slot + w.scalesAt(area) + o * kWireScaleBytes));
}

// The call's geometry, in groups, from the kernel's arguments (the kernel's and its failure
// branch's): world + 1 areas of seg_cap groups.
__device__ __forceinline__ ChunkedCall wireCall(const DeviceComm& c, const WireSlot& w,
                                                size_t count) {
  const size_t groups = (count + kWireGroup - 1) / kWireGroup;
  return chunkedCall(w.seg_cap * (c.world + 1), c.world + 1, c.world, groups, w.seg_cap * c.world,
                     gridDim.x);
}

// The failure branch: every output group of this thread from step `from` on is poison (the
// chunked kernels' walk, poison_layout.h, in groups).
template <typename T, WireCodec kC>
__device__ __noinline__ void poisonWire(const DeviceComm& c, T* recv, size_t count, size_t from) {
  constexpr int G = kWireGroup / VecTraits<T>::kElems;
  const ChunkedCall k = wireCall(c, wireSlot(kC, c.pull_slot_bytes, c.world), count);
  const ChunkStep st = chunkStep(k, 0, from, 0, blockIdx.x, threadIdx.x);
  forChunkStepsFrom(st, k.nvec, c.world, [&](size_t first, size_t end) {
    for (size_t o = st.o0; o < end; o += blockDim.x)
      for (int v = 0; v < G; ++v)
        storeVec<T>(recv, (first + o) * G + v, count, c.aligned, poisonVec());
  });
}

// The call's fingerprint kind: the all-reduce over this codec's wire.
template <WireCodec kC>
constexpr CallKind wireKind() {
  static_assert(kCallAllReduceFp8E5m2 - kCallAllReduceInt8 ==
                    static_cast<int>(WireCodec::kFp8E5M2) - static_cast<int>(WireCodec::kInt8),
                "the wire kinds follow WireCodec's order");
  return static_cast<CallKind>(kCallAllReduceInt8 + static_cast<int>(kC) -
                               static_cast<int>(WireCodec::kInt8));
}

template <typename T, int kW, WireCodec kC>
__global__ void __launch_bounds__(kThreadsPerBlock)
    twoShotPullWireKernel(const __grid_constant__ DeviceComm c, const T* send, T* recv,
                          size_t count, size_t /*chunk_vecs: the codec's slot sets the chunk*/) {
  const int world = c.world, rank = c.rank;
  const WireSlot w = wireSlot(kC, c.pull_slot_bytes, world);
  const ChunkedCall k = wireCall(c, w, count);
  const size_t stride = blockDim.x;
  CallSession session(c);
  if (!session.openAndAnnounce<PullProto, T, kW>(wireKind<kC>(), count)) {  // aborted
    poisonWire<T, kC>(c, recv, count, 0);
    return;
  }
  WaitCtx wait = session.startWaits();
  const bool checker = isPrintChecker();  // the thread that announced: it checks the peers'
  for (size_t step = 0; step < k.nsteps; ++step) {
    const ChunkStep st =
        chunkStep(k, session.epoch, step, PullProto::slotBytes(c), blockIdx.x, threadIdx.x);
    char* const mine = c.pulls[rank] + st.slot_off;

    // 1. My input's part of every peer's segment d, encoded into area d of my outbox.
    for (int p = 1; p < world; ++p) {
      const int d = ringRank(rank, p, world);
      for (size_t o = st.o0; o < min(st.o1, st.segLen(d)); o += stride) {
        float x[kWireGroup];
        loadGroup<T>(send, st.base + d * st.seg + o, count, c.aligned, x);
        GroupCodes<kC> q;
        const float scale = encodeGroup<kC>(x, &q);
        putGroup<kC>(mine, w, d, o, q, scale);
      }
    }
    bulkPublish<PullProto>(c, blockDim.x, st.epoch);
    if (step == 0 && checker)
      session.checkPeers<PullProto>(wait, session.print<T>(wireKind<kC>(), count));
    if (!pullAwait<0>(c, threadIdx.x, blockDim.x, st.epoch, wait)) {
      poisonWire<T, kC>(c, recv, count, step);  // gave up: this step's outputs and later ones
      return;
    }

    // 2. My segment: every rank's values in rank order (mine exact), rounded to T, encoded once
    //    into my reduced area; the decoded values into my output.
    const size_t own_first = st.base + rank * st.seg;
    for (size_t o = st.o0; o < min(st.o1, st.segLen(rank)); o += stride) {
      // Rank order with my input exact: acc holds mine while ranks 0 .. rank - 1 are summed
      // (one loop over every rank, mine read beside the others', kept a second array of 32
      // values live and spilled: 40-128 bytes of stack against 16-96).
      float acc[kWireGroup];
      loadGroup<T>(send, own_first + o, count, c.aligned, acc);
      if (rank != 0) {
        float own[kWireGroup];
#pragma unroll
        for (int i = 0; i < kWireGroup; ++i) own[i] = acc[i];
        for (int r = 0; r < rank; ++r) {
          GroupCodes<kC> q;
          const WireScale s = readGroup<kC>(c.pulls[r] + st.slot_off, w, rank, o, &q);
#pragma unroll
          for (int i = 0; i < kWireGroup; ++i)
            acc[i] = r == 0 ? decodeOne<kC>(q, s, i) : addRn(acc[i], decodeOne<kC>(q, s, i));
        }
#pragma unroll
        for (int i = 0; i < kWireGroup; ++i) acc[i] = addRn(acc[i], own[i]);
      }
      for (int r = rank + 1; r < world; ++r) {
        GroupCodes<kC> q;
        const WireScale s = readGroup<kC>(c.pulls[r] + st.slot_off, w, rank, o, &q);
#pragma unroll
        for (int i = 0; i < kWireGroup; ++i) acc[i] = addRn(acc[i], decodeOne<kC>(q, s, i));
      }
#pragma unroll
      for (int i = 0; i < kWireGroup; ++i) acc[i] = roundToT<T>(acc[i]);
      GroupCodes<kC> q;
      const WireScale s = wireScale(kC, encodeGroup<kC>(acc, &q));
      putGroup<kC>(mine, w, world, o, q, s.scale);
#pragma unroll
      for (int i = 0; i < kWireGroup; ++i) acc[i] = decodeOne<kC>(q, s, i);
      storeGroup<T>(recv, own_first + o, count, c.aligned, acc);
    }
    bulkPublish<PullPhaseProto<1>>(c, blockDim.x, st.epoch);
    if (step + 1 == k.nsteps) pdlLaunchDependents();
    if (!pullAwait<1>(c, threadIdx.x, blockDim.x, st.epoch, wait)) {
      poisonWire<T, kC>(c, recv, count, step);
      return;
    }

    // 3. Every other segment, decoded from its owner's reduced area.
    for (int p = 1; p < world; ++p) {
      const int d = ringRank(rank, p, world);
      const char* slot = c.pulls[d] + st.slot_off;
      for (size_t o = st.o0; o < min(st.o1, st.segLen(d)); o += stride) {
        GroupCodes<kC> q;
        const WireScale s = readGroup<kC>(slot, w, world, o, &q);
        float y[kWireGroup];
#pragma unroll
        for (int i = 0; i < kWireGroup; ++i) y[i] = decodeOne<kC>(q, s, i);
        storeGroup<T>(recv, st.base + d * st.seg + o, count, c.aligned, y);
      }
    }
  }
  session.close(k.nsteps);
}

template <WireCodec kC>
struct TwoShotPullWire {
  template <typename Proto, typename T, int kW>
  static const void* get() {
    return reinterpret_cast<const void*>(&twoShotPullWireKernel<T, kW, kC>);
  }
};

}  // namespace

// One kernel a datatype serves every world: the kernel keeps no per-peer registers (the world
// class only bounds the fingerprint's announce), and three classes would triple the fat binary's
// build for nothing.
KernelSet pullTwoShotInt8Kernels(int /*world*/) {
  return kernelSetFor<TwoShotPullWire<WireCodec::kInt8>, PullProto, kMaxRanks>();
}
KernelSet pullTwoShotInt4Kernels(int /*world*/) {
  return kernelSetFor<TwoShotPullWire<WireCodec::kInt4>, PullProto, kMaxRanks>();
}
KernelSet pullTwoShotFp8Kernels(int /*world*/) {
  return kernelSetFor<TwoShotPullWire<WireCodec::kFp8E4M3>, PullProto, kMaxRanks>();
}
KernelSet pullTwoShotFp8E5m2Kernels(int /*world*/) {
  return kernelSetFor<TwoShotPullWire<WireCodec::kFp8E5M2>, PullProto, kMaxRanks>();
}

}  // namespace tpcomm
