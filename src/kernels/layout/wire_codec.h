// The quantized wire's codec (issue: an opt-in quantized wire for large all-reduces): a group of
// kWireGroup consecutive elements travels as one fp32 scale word (the group's largest magnitude)
// and one code per element, INT8 or INT4 (symmetric, two's complement), or FP8 (OCP e4m3 or
// e5m2, saturated to the format's largest finite value). Every rank encodes and decodes with these
// functions, on the host and on the GPU alike (plain fp32 and integer arithmetic, each operation
// rounded once, no fused multiply-add), so a group decodes to the same bits wherever it is read;
// the CPU tests check the bounds below against a host reference. docs/PROTOCOL.md, "The quantized
// wire's codec", states them.
//
//   encode: y = x * (kMax / amax) (two roundings; the factor once a group), code =
//           round-to-nearest-even(y) as an integer (|y| may pass kMax by a rounding: the code
//           is kMax then), or y's FP8 code (saturated);
//   decode: x' = value(code) * (amax / kMax) (two roundings, the factor once a group).
//
// amax 0 (every element zero, either sign): every code 0, decoded 0. A group holding a NaN or an
// infinity has the scale word NaN: every element decodes to NaN, so a non-finite input never
// becomes a finite output (an infinity becomes a NaN: one scale cannot carry it beside finite
// elements).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/layout/ll_layout.h"  // TPCOMM_HOST_DEVICE

namespace tpcomm {

enum class WireCodec : int { kNone = 0, kInt8 = 1, kInt4 = 2, kFp8E4M3 = 3, kFp8E5M2 = 4 };
// The codes, none included: the size of a table by codec (the tuning table's wire_from).
constexpr int kWireCodecs = static_cast<int>(WireCodec::kFp8E5M2) + 1;

// Elements per group (one scale word each): a 16-byte vector of fp32, two of bf16/fp16, and a
// warp's 32 lanes each holding one element's code.
constexpr int kWireGroup = 32;

// Bits of an element's code.
TPCOMM_HOST_DEVICE constexpr int wireCodeBits(WireCodec c) {
  return c == WireCodec::kInt4 ? 4 : c == WireCodec::kNone ? 0 : 8;
}

// The largest magnitude a code holds: the group's amax maps onto it.
TPCOMM_HOST_DEVICE constexpr float wireCodeMax(WireCodec c) {
  return c == WireCodec::kInt8      ? 127.f
         : c == WireCodec::kInt4    ? 7.f
         : c == WireCodec::kFp8E4M3 ? 448.f
         : c == WireCodec::kFp8E5M2 ? 57344.f
                                    : 0.f;
}

// Bytes of a group on the wire: the codes, then (in the scale area) its 4-byte scale word.
TPCOMM_HOST_DEVICE constexpr size_t wireGroupCodeBytes(WireCodec c) {
  return static_cast<size_t>(kWireGroup * wireCodeBits(c) / 8);
}
constexpr size_t kWireScaleBytes = 4;

// Bytes of n elements on the wire (whole groups, codes and scale words).
TPCOMM_HOST_DEVICE constexpr size_t wireBytes(WireCodec c, size_t n) {
  return (n + kWireGroup - 1) / kWireGroup * (wireGroupCodeBytes(c) + kWireScaleBytes);
}

// A slot of the quantized two-shot, `areas` areas of `seg_cap` groups' codes each followed by
// their scale words: a pull outbox (twoshot_pull_wire.cu) has world + 1 (my input's part of every
// segment d, then my reduced segment), a push slot (twoshot_wire.cu) 2 * world (every source's
// part of my segment, then every owner's reduced segment). seg_cap is a multiple of 4, so every
// area and its scale words start on 16 bytes.
struct WireSlot {
  size_t seg_cap;     // groups an area holds
  size_t code_bytes;  // a group's codes
  TPCOMM_HOST_DEVICE size_t areaBytes() const { return seg_cap * (code_bytes + kWireScaleBytes); }
  TPCOMM_HOST_DEVICE size_t codesAt(int area) const { return area * areaBytes(); }
  TPCOMM_HOST_DEVICE size_t scalesAt(int area) const {
    return area * areaBytes() + seg_cap * code_bytes;
  }
};
TPCOMM_HOST_DEVICE inline WireSlot wireSlot(WireCodec c, size_t slot_bytes, int areas) {
  const size_t unit = wireGroupCodeBytes(c) + kWireScaleBytes;
  const size_t cap = unit > 0 ? slot_bytes / unit / static_cast<size_t>(areas) : 0;
  return WireSlot{cap / 4 * 4, wireGroupCodeBytes(c)};
}

// The push form's codes travel XORed with this mask (per 32-bit word), so that the one code the
// codec never writes becomes all ones, the push slots' resting state (the sentinel protocol's,
// sentinel_device.cuh): INT8 never writes -128 (0x80: codes are within +-127), INT4 never -8
// (0x8), FP8 never 0xFF (a NaN code: saturated finite values and code 0 for a NaN group only).
// A scale word is never all ones either: its sign bit is clear. The CPU tests check every code.
TPCOMM_HOST_DEVICE constexpr uint32_t wireSentinelMask(WireCodec c) {
  return c == WireCodec::kInt8 ? 0x7F7F7F7Fu : c == WireCodec::kInt4 ? 0x77777777u : 0u;
}

namespace wire_detail {

TPCOMM_HOST_DEVICE inline uint32_t bitsOf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
TPCOMM_HOST_DEVICE inline float floatOf(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// v >> s rounded to nearest, ties to even (s >= 1).
TPCOMM_HOST_DEVICE inline uint32_t roundShift(uint32_t v, int s) {
  if (s >= 32) return 0;
  const uint32_t q = v >> s, rem = v & ((1u << s) - 1), half = 1u << (s - 1);
  return q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
}

// An FP8 format: kE exponent bits, kM mantissa bits, its exponent bias, its largest finite code
// (sign bit clear) and its NaN code.
template <int kE, int kM, int kBias, uint32_t kMaxCode>
struct Fp8Format {
  static constexpr uint32_t kNan = 0x7Fu;
  // x's code, rounded to nearest even and saturated to the largest finite value (NaN: kNan).
  // sm_89+ converts in one instruction, with the same codes (CUDA's cuda_fp8.h host conversion
  // is its reference; the CPU tests check this code against it, the GPU tests the two against
  // each other).
  TPCOMM_HOST_DEVICE static uint8_t encode(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    unsigned short d;
    if constexpr (kE == 4) {
      asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(0.f), "f"(x));
    } else {
      asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(d) : "f"(0.f), "f"(x));
    }
    if ((bitsOf(x) & 0x7FFFFFFFu) <= 0x7F800000u) return static_cast<uint8_t>(d & 0xFFu);
#endif
    const uint32_t b = bitsOf(x), sign = (b >> 31) << 7, a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return static_cast<uint8_t>(sign | kNan);
    const int e = static_cast<int>(a >> 23) - 127;  // a's exponent (a normal float)
    const uint32_t sig = (a & 0x7FFFFFu) | 0x800000u;
    uint32_t code;
    if (a < 0x00800000u) {  // an fp32 subnormal: far below the format's smallest step
      code = 0;
    } else if (e < 1 - kBias) {  // the format's subnormals: steps of 2^(1 - bias - kM)
      code = roundShift(sig, 23 - kM + (1 - kBias - e));
    } else {
      const uint32_t m = roundShift(sig & 0x7FFFFFu, 23 - kM);  // may carry into the exponent
      code = (static_cast<uint32_t>(e + kBias) << kM) + m;
    }
    if (code > kMaxCode) code = kMaxCode;  // satfinite (infinities too)
    return static_cast<uint8_t>(sign | code);
  }
  TPCOMM_HOST_DEVICE static float decode(uint8_t c) {
    const uint32_t mag = c & 0x7Fu;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if (mag <= kMaxCode) {  // finite: exact through fp16
      unsigned int h2;
      const unsigned short in = c;
      if constexpr (kE == 4) {
        asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(in));
      } else {
        asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"(in));
      }
      float f;
      asm("{.reg .b16 lo, hi; mov.b32 {lo, hi}, %1; cvt.f32.f16 %0, lo;}" : "=f"(f) : "r"(h2));
      return f;
    }
#endif
    const bool neg = (c & 0x80u) != 0;
    if (mag > kMaxCode) return floatOf(0x7FC00000u);  // NaN (and e5m2's infinities: never encoded)
    const uint32_t e = mag >> kM, m = mag & ((1u << kM) - 1);
    // value = m * 2^(1 - bias - kM) (e = 0), else (2^kM + m) * 2^(e - bias - kM): exact in fp32.
    const int exp2 = (e == 0 ? 1 : static_cast<int>(e)) - kBias - kM;
    const float mant = static_cast<float>(e == 0 ? m : (1u << kM) + m);
    const float v = mant * floatOf(static_cast<uint32_t>(exp2 + 127) << 23);  // exact
    return neg ? -v : v;
  }
};
using E4M3 = Fp8Format<4, 3, 7, 0x7Eu>;
using E5M2 = Fp8Format<5, 2, 15, 0x7Bu>;

}  // namespace wire_detail

// x * y and x / y rounded once, never fused with a neighbouring add (nvcc contracts a * b + c
// into an FMA by default; the host compiler for x86-64 does not): the host reference and the
// kernels must round alike.
TPCOMM_HOST_DEVICE inline float mulRn(float x, float y) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(x, y);
#else
  return x * y;
#endif
}
TPCOMM_HOST_DEVICE inline float divRn(float x, float y) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(x, y);
#else
  return x / y;
#endif
}
TPCOMM_HOST_DEVICE inline float addRn(float x, float y) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(x, y);
#else
  return x + y;
#endif
}

// The scale word of a group: its largest magnitude, or NaN where it holds a NaN or an infinity.
TPCOMM_HOST_DEVICE inline float wireScaleOf(const float* x, int n) {
  float amax = 0.f;
  bool finite = true;
  for (int i = 0; i < n; ++i) {
    const uint32_t a = wire_detail::bitsOf(x[i]) & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) finite = false;
    const float m = wire_detail::floatOf(a);
    if (m > amax) amax = m;
  }
  return finite ? amax : wire_detail::floatOf(0x7FC00000u);
}

// What encoding and decoding a group take from its scale word, computed once a group: the
// encoder's factor kMax / scale (0 where the scale is 0 or NaN: every code 0; not finite where
// the scale is so small that kMax / scale overflows: the encoder divides then), the decoder's
// scale / kMax (NaN for a NaN scale: the whole group decodes to NaN).
struct WireScale {
  float scale;
  float enc;
  float dec;
};
TPCOMM_HOST_DEVICE inline WireScale wireScale(WireCodec c, float scale) {
  const float enc = scale > 0.f ? divRn(wireCodeMax(c), scale) : 0.f;
  return WireScale{scale, enc, divRn(scale, wireCodeMax(c))};
}

// Element x's code in a group of scale word s.scale (finite, >= |x|; NaN or 0: code 0):
// y = x * (kMax / scale) (or (x / scale) * kMax where kMax / scale overflows), rounded to the
// code. |y| may exceed kMax by an fp32 rounding: INT codes round it back to kMax, FP8 saturates.
TPCOMM_HOST_DEVICE inline uint8_t wireEncode(WireCodec c, float x, const WireScale& s) {
  if (!(s.enc > 0.f)) return 0;  // zero, or NaN (the scale word decodes the group)
  const float y =
      s.enc <= 3.4028235e38f ? mulRn(x, s.enc) : mulRn(divRn(x, s.scale), wireCodeMax(c));
  switch (c) {
    case WireCodec::kInt8:
    case WireCodec::kInt4: {
      const int q = static_cast<int>(rintf(y));  // |q| <= kMax
      return static_cast<uint8_t>(q & (c == WireCodec::kInt4 ? 0xF : 0xFF));
    }
    case WireCodec::kFp8E4M3:
      return wire_detail::E4M3::encode(y);
    case WireCodec::kFp8E5M2:
      return wire_detail::E5M2::encode(y);
    case WireCodec::kNone:
      break;
  }
  return 0;
}

// The value a code stands for, before the scale: the integer, or the FP8 value.
TPCOMM_HOST_DEVICE inline float wireCodeValue(WireCodec c, uint8_t code) {
  switch (c) {
    case WireCodec::kInt8:
      return static_cast<float>(static_cast<int8_t>(code));
    case WireCodec::kInt4:
      return static_cast<float>(static_cast<int>(code & 0xF) - ((code & 0x8) ? 16 : 0));
    case WireCodec::kFp8E4M3:
      return wire_detail::E4M3::decode(code);
    case WireCodec::kFp8E5M2:
      return wire_detail::E5M2::decode(code);
    case WireCodec::kNone:
      break;
  }
  return 0.f;
}

// x' = value(code) * (scale / kMax).
TPCOMM_HOST_DEVICE inline float wireDecode(WireCodec c, uint8_t code, const WireScale& s) {
  return mulRn(wireCodeValue(c, code), s.dec);
}

// The most |decode(encode(x)) - x| can be in a finite group of scale word `amax`: the code's
// rounding (INT: half a step, amax / (2 kMax); FP8: half an ulp of y, 2^-(kM + 1) |x|, or half
// the smallest subnormal step, scaled back), plus the four fp32 roundings (2^-21 amax covers
// them) and an fp32 subnormal's absolute error.
inline double wireErrorBound(WireCodec c, double x, double amax) {
  const double fp32 = amax * std::ldexp(1.0, -21) + std::ldexp(1.0, -126);
  switch (c) {
    case WireCodec::kInt8:
    case WireCodec::kInt4:
      return amax * 0.5 / wireCodeMax(c) + fp32;
    case WireCodec::kFp8E4M3:  // 3 mantissa bits; subnormal step 2^-9
      return std::fabs(x) * std::ldexp(1.0, -4) + amax * std::ldexp(1.0, -10) / 448.0 + fp32;
    case WireCodec::kFp8E5M2:  // 2 mantissa bits; subnormal step 2^-16
      return std::fabs(x) * std::ldexp(1.0, -3) + amax * std::ldexp(1.0, -17) / 57344.0 + fp32;
    case WireCodec::kNone:
      break;
  }
  return 0;
}

}  // namespace tpcomm
