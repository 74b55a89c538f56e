// 16-byte vectors of T: loading user memory (any alignment, partial tail), canonicalising away the
// sentinel, and summing in fp32 in a fixed rank order so every rank gets the same bits.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/layout/device_comm.h"

namespace tpcomm {

template <typename T>
struct VecTraits {
  static constexpr int kElems = kVecBytes / sizeof(T);
};

// ---- sentinel ----
// True when any element of v still holds the sentinel (its data has not arrived).
template <typename T>
__device__ __forceinline__ bool hasSentinel(const uint4& v) {
  if constexpr (sizeof(T) == 4) {
    return v.x == kSentinelWord || v.y == kSentinelWord || v.z == kSentinelWord ||
           v.w == kSentinelWord;
  } else {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    bool any = false;
#pragma unroll
    for (int i = 0; i < 4; ++i) any |= ((w[i] & 0xFFFFu) == 0xFFFFu) || ((w[i] >> 16) == 0xFFFFu);
    return any;
  }
}

// Rewrites the sentinel NaN payload to another NaN (0x7FFFFFFF / 0x7FFF): same value class.
template <typename T>
__device__ __forceinline__ uint32_t canonWord(uint32_t w) {
  if constexpr (sizeof(T) == 4) {
    return w == kSentinelWord ? 0x7FFFFFFFu : w;
  } else {
    if ((w & 0xFFFFu) == 0xFFFFu) w = (w & 0xFFFF0000u) | 0x7FFFu;
    if ((w >> 16) == 0xFFFFu) w = (w & 0x0000FFFFu) | 0x7FFF0000u;
    return w;
  }
}
template <typename T>
__device__ __forceinline__ uint4 canon(uint4 v) {
  return make_uint4(canonWord<T>(v.x), canonWord<T>(v.y), canonWord<T>(v.z), canonWord<T>(v.w));
}

__device__ __forceinline__ uint4 sentinelVec() {
  return make_uint4(kSentinelWord, kSentinelWord, kSentinelWord, kSentinelWord);
}

// ---- lanes of a vector, by bit operations (no unions or pointer casts: those put the vector in
// local memory, seen as stack frames in the ptxas report) ----
__device__ __forceinline__ uint32_t word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
__device__ __forceinline__ void setWord(uint4& v, int i, uint32_t w) {
  if (i == 0)
    v.x = w;
  else if (i == 1)
    v.y = w;
  else if (i == 2)
    v.z = w;
  else
    v.w = w;
}
// Bits of element i (compile-time after unrolling) of a vector of T, in the low bits.
template <typename T>
__device__ __forceinline__ uint32_t laneBits(const uint4& v, int i) {
  if constexpr (sizeof(T) == 4)
    return word(v, i);
  else
    return (word(v, i >> 1) >> ((i & 1) * 16)) & 0xFFFFu;
}
template <typename T>
__device__ __forceinline__ void setLaneBits(uint4& v, int i, uint32_t bits) {
  if constexpr (sizeof(T) == 4) {
    setWord(v, i, bits);
  } else {
    const int sh = (i & 1) * 16;
    setWord(v, i >> 1, (word(v, i >> 1) & ~(0xFFFFu << sh)) | (bits << sh));
  }
}
// An element's bits (laneBits) as a float, and back, rounding to nearest even. On the raw bits:
// the __half class wrappers put vectors in local memory.
template <typename T>
__device__ __forceinline__ float bitsToFloat(uint32_t b) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, __half> ||
                std::is_same_v<T, __nv_bfloat16>);
  if constexpr (std::is_same_v<T, float>) {
    return __uint_as_float(b);
  } else if constexpr (std::is_same_v<T, __half>) {
    float f;
    asm("{.reg .b16 h; cvt.u16.u32 h, %1; cvt.f32.f16 %0, h;}" : "=f"(f) : "r"(b));
    return f;
  } else {
    return __uint_as_float(b << 16);  // bf16 is the top half of an fp32
  }
}
template <typename T>
__device__ __forceinline__ uint32_t floatToBits(float f) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, __half> ||
                std::is_same_v<T, __nv_bfloat16>);
  if constexpr (std::is_same_v<T, float>) {
    return __float_as_uint(f);
  } else if constexpr (std::is_same_v<T, __half>) {
    uint32_t b;
    asm("{.reg .b16 h; cvt.rn.f16.f32 h, %1; cvt.u32.u16 %0, h;}" : "=r"(b) : "f"(f));
    return b;
  } else {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
  }
}

// ---- user memory ----
// Vector v of a T array of `count` elements. Aligned: base is 16-byte aligned, so a full vector is
// one 16-byte load. The partial last vector and unaligned bases go element by element, never
// touching memory past `count`; missing elements read as zero (never the sentinel).
template <typename T>
__device__ __forceinline__ uint4 loadVec(const T* base, size_t v, size_t count, bool aligned) {
  constexpr int E = VecTraits<T>::kElems;
  const size_t first = v * E;
  if (aligned && first + E <= count) return *reinterpret_cast<const uint4*>(base + first);
  using Bits = typename std::conditional<sizeof(T) == 4, uint32_t, unsigned short>::type;
  const Bits* b = reinterpret_cast<const Bits*>(base);
  uint4 out = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int i = 0; i < E; ++i)
    if (first + i < count) setLaneBits<T>(out, i, b[first + i]);
  return out;
}

template <typename T>
__device__ __forceinline__ void storeVec(T* base, size_t v, size_t count, bool aligned,
                                         const uint4& val) {
  constexpr int E = VecTraits<T>::kElems;
  const size_t first = v * E;
  if (aligned && first + E <= count) {
    *reinterpret_cast<uint4*>(base + first) = val;
    return;
  }
  using Bits = typename std::conditional<sizeof(T) == 4, uint32_t, unsigned short>::type;
  Bits* b = reinterpret_cast<Bits*>(base);
#pragma unroll
  for (int i = 0; i < E; ++i)
    if (first + i < count) b[first + i] = static_cast<Bits>(laneBits<T>(val, i));
}

// ---- reduction: acc = x (first rank) or acc += x, in fp32 ----
template <typename T>
struct Acc {
  float f[VecTraits<T>::kElems];

  __device__ __forceinline__ void set(const uint4& v) {
#pragma unroll
    for (int i = 0; i < VecTraits<T>::kElems; ++i) f[i] = bitsToFloat<T>(laneBits<T>(v, i));
  }
  __device__ __forceinline__ void add(const uint4& v) {
#pragma unroll
    for (int i = 0; i < VecTraits<T>::kElems; ++i) f[i] += bitsToFloat<T>(laneBits<T>(v, i));
  }
  // The fp32 sums, four at a time (h < kElems / 4), as raw words: how a partial sum travels
  // between islands (island.cu). Not canonicalised.
  __device__ __forceinline__ uint4 quad(int h) const {
    return make_uint4(__float_as_uint(f[4 * h]), __float_as_uint(f[4 * h + 1]),
                      __float_as_uint(f[4 * h + 2]), __float_as_uint(f[4 * h + 3]));
  }
  // The inverse of quad: sums h from their raw words (island_pull.cu reads its own back).
  __device__ __forceinline__ void setQuad(int h, const uint4& q) {
#pragma unroll
    for (int i = 0; i < 4; ++i) f[4 * h + i] = __uint_as_float(word(q, i));
  }
  // acc += quad h of another sum (or, first: acc = that quad + acc), elementwise in fp32.
  __device__ __forceinline__ void addQuad(int h, const uint4& q, bool first) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float x = __uint_as_float(word(q, i));
      f[4 * h + i] = first ? x + f[4 * h + i] : f[4 * h + i] + x;
    }
  }
  // Rounded back to T and canonicalised (a sum can round to the sentinel NaN's bits).
  __device__ __forceinline__ uint4 result() const {
    uint4 out = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int i = 0; i < VecTraits<T>::kElems; ++i) setLaneBits<T>(out, i, floatToBits<T>(f[i]));
    return canon<T>(out);
  }
};

// ---- staging memory: volatile so every poll reads L2, where peers' writes land ----
__device__ __forceinline__ uint4 loadVolatile(const uint4* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

// Volatile store, as NCCL's LL protocol uses for host memory: it goes out as one 16-byte write
// and is not held back (two 8-byte {data, flag} halves must each land whole).
__device__ __forceinline__ void storeVolatile16(uint4* p, const uint4& v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}

__device__ __forceinline__ void storeVec16(uint4* p, const uint4& v) {
  asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}

}  // namespace tpcomm
