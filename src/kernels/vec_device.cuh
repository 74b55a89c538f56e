// 16-byte vectors of T: loading user memory (any alignment, partial tail), canonicalising away the
// sentinel, and summing in fp32 in a fixed rank order so every rank gets the same bits.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/device_comm.h"

namespace tpcomm {

template <typename T>
struct VecTraits {
  static constexpr int kElems = kVecBytes / sizeof(T);
};

// ---- element <-> fp32 ----
__device__ __forceinline__ float toFloat(float x) { return x; }
__device__ __forceinline__ float toFloat(__half x) { return __half2float(x); }
__device__ __forceinline__ float toFloat(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ __forceinline__ T fromFloat(float x);
template <>
__device__ __forceinline__ float fromFloat<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half fromFloat<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

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
    for (int i = 0; i < 4; ++i)
      any |= ((w[i] & 0xFFFFu) == 0xFFFFu) || ((w[i] >> 16) == 0xFFFFu);
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

// ---- user memory ----
// Vector v of a T array of `count` elements. Aligned: base is 16-byte aligned, so a full vector is
// one 16-byte load. The partial last vector and unaligned bases go element by element, never
// touching memory past `count`; missing elements read as zero (never the sentinel).
template <typename T, bool kAligned>
__device__ __forceinline__ uint4 loadVec(const T* base, size_t v, size_t count) {
  constexpr int E = VecTraits<T>::kElems;
  const size_t first = v * E;
  if (kAligned && first + E <= count) return *reinterpret_cast<const uint4*>(base + first);
  union {
    uint4 u;
    T e[E];
  } out;
  out.u = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int i = 0; i < E; ++i)
    if (first + i < count) out.e[i] = base[first + i];
  return out.u;
}

template <typename T, bool kAligned>
__device__ __forceinline__ void storeVec(T* base, size_t v, size_t count, const uint4& val) {
  constexpr int E = VecTraits<T>::kElems;
  const size_t first = v * E;
  if (kAligned && first + E <= count) {
    *reinterpret_cast<uint4*>(base + first) = val;
    return;
  }
  union {
    uint4 u;
    T e[E];
  } in;
  in.u = val;
#pragma unroll
  for (int i = 0; i < E; ++i)
    if (first + i < count) base[first + i] = in.e[i];
}

// ---- reduction: acc = x (first rank) or acc += x, in fp32 ----
template <typename T>
struct Acc {
  float f[VecTraits<T>::kElems];

  __device__ __forceinline__ void set(const uint4& v) {
    const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
    for (int i = 0; i < VecTraits<T>::kElems; ++i) f[i] = toFloat(e[i]);
  }
  __device__ __forceinline__ void add(const uint4& v) {
    const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
    for (int i = 0; i < VecTraits<T>::kElems; ++i) f[i] += toFloat(e[i]);
  }
  // Rounded back to T and canonicalised (a sum can round to the sentinel NaN's bits).
  __device__ __forceinline__ uint4 result() const {
    union {
      uint4 u;
      T e[VecTraits<T>::kElems];
    } out;
#pragma unroll
    for (int i = 0; i < VecTraits<T>::kElems; ++i) out.e[i] = fromFloat<T>(f[i]);
    return canon<T>(out.u);
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

__device__ __forceinline__ void storeVec16(uint4* p, const uint4& v) {
  asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}

}  // namespace tpcomm
