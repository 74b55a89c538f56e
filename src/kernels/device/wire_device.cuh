// The quantized wire's device side, shared by its two-shot kernels (twoshot_pull_wire.cu: pull
// over peer or host memory; twoshot_wire.cu: push over peer memory): a group of kWireGroup
// elements in registers as fp32, its codes (kernels/layout/wire_codec.h), where a group lies in a
// slot of WireSlot areas, the owner's sum in rank order, and the failure branch. A thread owns
// whole groups, the same offsets of every segment in every step (chunk_layout.h, in groups).
//
// The push form's entries say themselves when they have arrived, as the sentinel protocol's do
// (sentinel_device.cuh): a push slot rests all ones, and no code the codec writes is all ones once
// XORed with wireSentinelMask (wire_codec.h), nor is any scale word (its sign bit is clear).
#pragma once

#include <type_traits>

#include "kernels/device/poison_device.cuh"
#include "kernels/device/session_device.cuh"
#include "kernels/layout/chunk_layout.h"
#include "kernels/layout/wire_codec.h"

namespace tpcomm {

constexpr int kGroupWords = kWireGroup / 4;  // 32-bit words of a group's codes, 8-bit codes

// The codes of one group in registers: 8-bit codes byte by byte (word j: codes 4j..4j+3), 4-bit
// codes nibble by nibble (word j: codes 8j..8j+7, the low nibble first).
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

// Where group o of area `area` of a slot keeps its codes and its scale word; const where the slot
// is (Byte: char or const char).
template <typename Byte, typename To>
using ConstAs = std::conditional_t<std::is_const_v<Byte>, const To, To>;
template <WireCodec kC, typename Byte>
__device__ __forceinline__ ConstAs<Byte, uint4>* groupCodesAt(Byte* slot, const WireSlot& w,
                                                              int area, size_t o) {
  return reinterpret_cast<ConstAs<Byte, uint4>*>(slot + w.codesAt(area) +
                                                 o * wireGroupCodeBytes(kC));
}
template <typename Byte>
__device__ __forceinline__ ConstAs<Byte, float>* groupScaleAt(Byte* slot, const WireSlot& w,
                                                              int area, size_t o) {
  return reinterpret_cast<ConstAs<Byte, float>*>(slot + w.scalesAt(area)) + o;
}

// A group's codes and scale word into group o of area `area` of a slot, each word XORed with
// `mask` (0: the pull outboxes; wireSentinelMask: the push slots).
template <WireCodec kC>
__device__ __forceinline__ void putGroup(char* slot, const WireSlot& w, int area, size_t o,
                                         const GroupCodes<kC>& q, float scale, uint32_t mask = 0) {
  uint4* to = groupCodesAt<kC>(slot, w, area, o);
  storeVec16(to, make_uint4(q.w[0] ^ mask, q.w[1] ^ mask, q.w[2] ^ mask, q.w[3] ^ mask));
  if constexpr (kC != WireCodec::kInt4)
    storeVec16(to + 1, make_uint4(q.w[4] ^ mask, q.w[5] ^ mask, q.w[6] ^ mask, q.w[7] ^ mask));
  *groupScaleAt(slot, w, area, o) = scale;
}

// The raw words of group o of area `area` (volatile loads: a slot is rewritten every kNumSlots
// steps and must not be served from a cache): its codes into q, its scale word returned.
template <WireCodec kC>
__device__ __forceinline__ uint32_t loadGroupWords(const char* slot, const WireSlot& w, int area,
                                                   size_t o, GroupCodes<kC>* q) {
  const uint4* from = groupCodesAt<kC>(slot, w, area, o);
  const uint4 a = loadVolatile(from);
  q->w[0] = a.x, q->w[1] = a.y, q->w[2] = a.z, q->w[3] = a.w;
  if constexpr (kC != WireCodec::kInt4) {
    const uint4 b = loadVolatile(from + 1);
    q->w[4] = b.x, q->w[5] = b.y, q->w[6] = b.z, q->w[7] = b.w;
  }
  return *reinterpret_cast<const volatile uint32_t*>(groupScaleAt(slot, w, area, o));
}

// The codes of group o of area `area` of a published outbox slot (pull), and what decoding them
// takes from its scale word.
template <WireCodec kC>
__device__ __forceinline__ WireScale readGroup(const char* slot, const WireSlot& w, int area,
                                               size_t o, GroupCodes<kC>* q) {
  return wireScale(kC, __uint_as_float(loadGroupWords<kC>(slot, w, area, o, q)));
}

// Whether a push entry's word holds no sentinel code (a byte, or a nibble, of all ones): the
// zero-byte test (x - 0x01..01) & ~x & 0x80..80 on ~word, exact for "is there one".
template <WireCodec kC>
__device__ __forceinline__ bool wordArrived(uint32_t word) {
  const uint32_t x = ~word;
  if constexpr (kC == WireCodec::kInt4) {
    return ((x - 0x11111111u) & ~x & 0x88888888u) == 0;
  } else {
    return ((x - 0x01010101u) & ~x & 0x80808080u) == 0;
  }
}

// Waits for group o of area `area` of my push slot (pushed by rank `peer`), hands its codes to q
// (the mask taken off) and what decoding takes from its scale word to s, and puts the slot's
// resting state back. False once the call gave up.
template <WireCodec kC>
__device__ __forceinline__ bool takeGroup(const DeviceComm& c, WaitCtx& wait, char* slot,
                                          const WireSlot& w, int area, size_t o, int peer,
                                          unsigned long long step, GroupCodes<kC>* q,
                                          WireScale* s) {
  uint32_t scale = 0;
  unsigned spins = 0;
  while (!wait.failed) {
    scale = loadGroupWords<kC>(slot, w, area, o, q);
    bool all = scale != kSentinelWord;
#pragma unroll
    for (int j = 0; j < GroupCodes<kC>::kWords; ++j) all = all && wordArrived<kC>(q->w[j]);
    if (all || !keepWaiting(wait, spins, c, peer, step)) break;
  }
  if (wait.failed) return false;
  constexpr uint32_t mask = wireSentinelMask(kC);
#pragma unroll
  for (int j = 0; j < GroupCodes<kC>::kWords; ++j) q->w[j] ^= mask;
  *s = wireScale(kC, __uint_as_float(scale));
  uint4* codes = groupCodesAt<kC>(slot, w, area, o);
  storeVec16(codes, sentinelVec());
  if constexpr (kC != WireCodec::kInt4) storeVec16(codes + 1, sentinelVec());
  *reinterpret_cast<volatile uint32_t*>(groupScaleAt(slot, w, area, o)) = kSentinelWord;
  return true;
}

// Group g of my own segment summed over every rank in rank order into acc, in fp32: my input
// exact (read from send), every other rank r's values decoded from what fetch(r, &q, &s) gives
// (false: the call gave up, and so does this). Mine stays apart while ranks 0 .. rank - 1 are
// summed (one loop over every rank, mine read beside the others', kept a second array of 32 values
// live and spilled: 40-128 bytes of stack against 16-96).
template <typename T, WireCodec kC, typename Fetch>
__device__ __forceinline__ bool sumOwnGroup(int rank, int world, const T* send, size_t g,
                                            size_t count, bool aligned, Fetch fetch,
                                            float (&acc)[kWireGroup]) {
  loadGroup<T>(send, g, count, aligned, acc);
  if (rank != 0) {
    float own[kWireGroup];
#pragma unroll
    for (int i = 0; i < kWireGroup; ++i) own[i] = acc[i];
    for (int r = 0; r < rank; ++r) {
      GroupCodes<kC> q;
      WireScale s;
      if (!fetch(r, &q, &s)) return false;
#pragma unroll
      for (int i = 0; i < kWireGroup; ++i)
        acc[i] = r == 0 ? decodeOne<kC>(q, s, i) : addRn(acc[i], decodeOne<kC>(q, s, i));
    }
#pragma unroll
    for (int i = 0; i < kWireGroup; ++i) acc[i] = addRn(acc[i], own[i]);
  }
  for (int r = rank + 1; r < world; ++r) {
    GroupCodes<kC> q;
    WireScale s;
    if (!fetch(r, &q, &s)) return false;
#pragma unroll
    for (int i = 0; i < kWireGroup; ++i) acc[i] = addRn(acc[i], decodeOne<kC>(q, s, i));
  }
  return true;
}

// The owner's sum rounded to T and encoded once (q, the returned WireScale), and acc replaced by
// the decoded values: the bits every rank outputs.
template <typename T, WireCodec kC>
__device__ __forceinline__ WireScale encodeReduced(float (&acc)[kWireGroup], GroupCodes<kC>* q) {
#pragma unroll
  for (int i = 0; i < kWireGroup; ++i) acc[i] = roundToT<T>(acc[i]);
  const WireScale s = wireScale(kC, encodeGroup<kC>(acc, q));
#pragma unroll
  for (int i = 0; i < kWireGroup; ++i) acc[i] = decodeOne<kC>(*q, s, i);
  return s;
}

// The call's geometry, in groups, from the kernel's arguments (the kernel's and its failure
// branch's): `areas` areas of w.seg_cap groups a slot, steps of world segments.
__device__ __forceinline__ ChunkedCall wireCall(const DeviceComm& c, const WireSlot& w, int areas,
                                                size_t count) {
  const size_t groups = (count + kWireGroup - 1) / kWireGroup;
  return chunkedCall(w.seg_cap * areas, areas, c.world, groups, w.seg_cap * c.world, gridDim.x);
}

// The failure branch: every output group of this thread from step `from` on is poison (the
// chunked kernels' walk, poison_layout.h, in groups). slot_bytes, areas: the kernel's layout.
template <typename T, WireCodec kC>
__device__ __noinline__ void poisonWire(const DeviceComm& c, const LaunchParams& l,
                                        size_t slot_bytes, int areas, T* recv, size_t count,
                                        size_t from) {
  constexpr int G = kWireGroup / VecTraits<T>::kElems;
  const ChunkedCall k = wireCall(c, wireSlot(kC, slot_bytes, areas), areas, count);
  const ChunkStep st = chunkStep(k, 0, from, 0, blockIdx.x, threadIdx.x);
  forChunkStepsFrom(st, k.nvec, c.world, [&](size_t first, size_t end) {
    for (size_t o = st.o0; o < end; o += blockDim.x)
      for (int v = 0; v < G; ++v)
        storeVec<T>(recv, (first + o) * G + v, count, l.aligned, poisonVec());
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

}  // namespace tpcomm
