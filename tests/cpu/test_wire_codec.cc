// The quantized wire's codec (src/kernels/layout/wire_codec.h), the code every rank's kernels
// share: its FP8 conversions against CUDA's own (cuda_fp8.h, satfinite, round to nearest even),
// the round trip of every codec within the bound docs/PROTOCOL.md states on random, heavy-tailed,
// all-equal, tiny and huge groups, and what a NaN or an infinity in a group becomes.
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/layout/wire_codec.h"

namespace tpcomm {
namespace {

constexpr WireCodec kCodecs[] = {WireCodec::kInt8, WireCodec::kInt4, WireCodec::kFp8E4M3,
                                 WireCodec::kFp8E5M2};

const char* nameOf(WireCodec c) {
  switch (c) {
    case WireCodec::kInt8:
      return "int8";
    case WireCodec::kInt4:
      return "int4";
    case WireCodec::kFp8E4M3:
      return "fp8_e4m3";
    case WireCodec::kFp8E5M2:
      return "fp8_e5m2";
    case WireCodec::kNone:
      break;
  }
  return "none";
}

// One element through the codec in a group of scale word `scale`.
float roundTrip(WireCodec c, float x, float scale) {
  const WireScale s = wireScale(c, scale);
  return wireDecode(c, wireEncode(c, x, s), s);
}

float floatOf(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// CUDA's host conversion: the reference the GPU's cvt.rn.satfinite matches.
uint8_t cudaFp8(float x, __nv_fp8_interpretation_t kind) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, kind));
}

// Every fp32 exponent with a spread of mantissas (ties, their neighbours, the carry into the
// exponent), both signs, zeros and infinities: the same codes as CUDA's.
TEST(WireCodec, Fp8EncodesAsCudaDoes) {
  std::vector<uint32_t> bits = {0u, 0x80000000u, 0x7F800000u, 0xFF800000u, 1u, 0x007FFFFFu};
  std::mt19937 rng(7);
  for (uint32_t e = 1; e < 255; ++e) {
    for (uint32_t m : {0u, 1u, 0x80000u, 0x7FFFFu, 0x80001u, 0x100000u, 0x180000u, 0x7FFFFFu,
                       0x400000u, 0x3FFFFFu, 0x600000u, 0x700000u, 0x780000u})
      bits.push_back((e << 23) | m);
    for (int i = 0; i < 64; ++i) bits.push_back((e << 23) | (rng() & 0x7FFFFFu));
  }
  // Where both formats have their normals and subnormals (2^-27 .. 2^18), every 2^-12 step of
  // the mantissa, and the step's last value before the next one (the ties' neighbours).
  for (uint32_t e = 100; e < 146; ++e)
    for (uint32_t m = 0; m < 4096; ++m) {
      bits.push_back((e << 23) | (m << 11));
      bits.push_back((e << 23) | (m << 11) | 0x7FFu);
    }
  int checked = 0;
  for (uint32_t b : bits)
    for (uint32_t sign : {0u, 0x80000000u}) {
      const float x = floatOf(b | sign);
      ASSERT_EQ(wire_detail::E4M3::encode(x), cudaFp8(x, __NV_E4M3)) << x;
      ASSERT_EQ(wire_detail::E5M2::encode(x), cudaFp8(x, __NV_E5M2)) << x;
      ++checked;
    }
  EXPECT_GT(checked, 790000);
}

// Every code decodes to CUDA's value for it (NaN codes to a NaN).
TEST(WireCodec, Fp8DecodesAsCudaDoes) {
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    for (auto kind : {__NV_E4M3, __NV_E5M2}) {
      const __half hv(__nv_cvt_fp8_to_halfraw(code, kind));
      const float want = __half2float(hv);
      const float got =
          kind == __NV_E4M3 ? wire_detail::E4M3::decode(code) : wire_detail::E5M2::decode(code);
      if (std::isnan(want) || std::isinf(want)) {
        // e5m2's infinity codes are never encoded (satfinite): they decode as NaN here.
        EXPECT_TRUE(std::isnan(got)) << c;
      } else {
        EXPECT_EQ(got, want) << "code " << c;
      }
    }
  }
}

// One group through the codec, every element within the bound, in both directions of |x|.
void expectRoundTrip(WireCodec c, const std::vector<float>& x, const std::string& what) {
  ASSERT_EQ(x.size(), static_cast<size_t>(kWireGroup));
  const float scale = wireScaleOf(x.data(), kWireGroup);
  ASSERT_TRUE(std::isfinite(scale)) << what;
  for (float v : x) {
    const float back = roundTrip(c, v, scale);
    const double err = std::fabs(static_cast<double>(back) - v);
    const double bound = wireErrorBound(c, v, scale);
    ASSERT_LE(err, bound) << nameOf(c) << " " << what << ": " << v << " came back " << back
                          << " (scale " << scale << ")";
  }
}

TEST(WireCodec, RoundTripWithinTheBound) {
  std::mt19937_64 rng(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::cauchy_distribution<float> cauchy(0.f, 1.f);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  for (WireCodec c : kCodecs)
    for (int trial = 0; trial < 2000; ++trial) {
      std::vector<float> x(kWireGroup);
      const int kind = trial % 6;
      const float mag = std::ldexp(1.f, static_cast<int>(rng() % 200) - 100);
      for (float& v : x) {
        switch (kind) {
          case 0:
            v = normal(rng) * mag;
            break;
          case 1:  // heavy-tailed: one element dwarfs the rest
            v = std::max(-1e30f, std::min(1e30f, cauchy(rng))) * mag * 1e-30f;
            break;
          case 2:
            v = uni(rng) * mag;
            break;
          case 3:  // all equal
            v = mag;
            break;
          case 4:  // fp32 subnormals and the smallest normals
            v = uni(rng) * std::numeric_limits<float>::min() * 4;
            break;
          default:  // near fp32's largest
            v = uni(rng) * std::numeric_limits<float>::max();
            break;
        }
      }
      expectRoundTrip(c, x, "trial " + std::to_string(trial));
      if (HasFatalFailure()) return;
    }
}

// The measured worst error of random groups against the stated bound: the INT codecs reach at
// least 90% of half a step (so the bound is the step's, not a loose one); FP8 stays within it.
TEST(WireCodec, TheIntBoundIsTight) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  for (WireCodec c : {WireCodec::kInt8, WireCodec::kInt4}) {
    double worst = 0;
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<float> x(kWireGroup);
      for (float& v : x) v = uni(rng);
      const float s = wireScaleOf(x.data(), kWireGroup);
      for (float v : x)
        worst = std::max(worst, std::fabs(static_cast<double>(roundTrip(c, v, s)) - v) / s);
    }
    EXPECT_GT(worst, 0.9 * 0.5 / wireCodeMax(c)) << nameOf(c);
    EXPECT_LE(worst, 0.5 / wireCodeMax(c) + 1e-6) << nameOf(c);
  }
}

// The group's largest element comes back exactly (INT: kMax steps; FP8: kMax is a code), and a
// group of zeros is zeros.
TEST(WireCodec, TheLargestElementAndZerosAreExact) {
  for (WireCodec c : kCodecs) {
    std::vector<float> x(kWireGroup, 0.f);
    EXPECT_EQ(wireScaleOf(x.data(), kWireGroup), 0.f);
    EXPECT_EQ(roundTrip(c, 0.f, 0.f), 0.f) << nameOf(c);
    for (float amax : {1.f, 3.1f, 1e-20f, 6e37f}) {
      x[5] = -amax;
      const float s = wireScaleOf(x.data(), kWireGroup);
      EXPECT_EQ(s, amax);
      EXPECT_EQ(roundTrip(c, -amax, s), -amax) << nameOf(c) << " " << amax;
    }
  }
}

// A NaN or an infinity anywhere in a group makes the scale word NaN: every element of the group
// decodes to NaN, never to a finite number.
TEST(WireCodec, ANonFiniteElementMakesTheGroupNaN) {
  for (WireCodec c : kCodecs)
    for (float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
          -std::numeric_limits<float>::infinity()}) {
      std::vector<float> x(kWireGroup, 1.5f);
      x[17] = bad;
      const float s = wireScaleOf(x.data(), kWireGroup);
      EXPECT_TRUE(std::isnan(s)) << nameOf(c);
      for (float v : x) EXPECT_TRUE(std::isnan(roundTrip(c, v, s))) << nameOf(c) << " " << bad;
    }
}

// What a group costs on the wire: 32 codes and a 4-byte scale word, against 64 bytes of bf16.
TEST(WireCodec, BytesOnTheWire) {
  EXPECT_EQ(wireBytes(WireCodec::kInt8, 32), 36u);
  EXPECT_EQ(wireBytes(WireCodec::kFp8E4M3, 64), 72u);
  EXPECT_EQ(wireBytes(WireCodec::kInt4, 32), 20u);
  EXPECT_EQ(wireBytes(WireCodec::kInt4, 33), 40u);  // whole groups
  EXPECT_EQ(wireGroupCodeBytes(WireCodec::kInt4), 16u);
}

// The push form's arrival test (twoshot_wire.cu): no code the codec writes is the slots'
// resting state once XORed with wireSentinelMask (a byte of all ones, or a nibble of all ones
// for INT4), and no scale word is all ones. Every code reachable: values across the whole range of
// a group's scale (both signs, the saturation edge, the FP8 subnormals), zero and NaN groups.
TEST(WireCodec, NoPushedCodeLooksLikeAnEmptySlot) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (WireCodec c : kCodecs) {
    const uint32_t mask = wireSentinelMask(c) & (wireCodeBits(c) == 4 ? 0xFu : 0xFFu);
    const uint32_t empty = wireCodeBits(c) == 4 ? 0xFu : 0xFFu;
    bool seen[256] = {};
    for (float scale : {1.f, 3.5f, 1e-30f, 6e4f, 3e38f}) {
      const WireScale s = wireScale(c, scale);
      for (int i = -100000; i <= 100000; ++i) {
        const float x = scale * static_cast<float>(i) / 100000.f;
        seen[wireEncode(c, x, s)] = true;
        seen[wireEncode(c, x * std::ldexp(1.f, -(i & 31)), s)] = true;  // the small codes
      }
      for (int i = 0; i < 1000; ++i) seen[wireEncode(c, scale * u(rng), s)] = true;
    }
    seen[wireEncode(c, 1.f, wireScale(c, 0.f))] = true;                   // an all-zero group
    seen[wireEncode(c, 1.f, wireScale(c, floatOf(0x7FC00000u)))] = true;  // a NaN group
    int codes = 0;
    for (uint32_t b = 0; b < 256; ++b) {
      if (!seen[b]) continue;
      ++codes;
      EXPECT_NE((b ^ mask) & empty, empty) << nameOf(c) << " code " << b;
    }
    // Every code but those never written: INT8 -128, INT4 -8, e4m3 its two NaNs, e5m2 its
    // infinities and NaNs (satfinite).
    const int want = c == WireCodec::kInt8      ? 255
                     : c == WireCodec::kInt4    ? 15
                     : c == WireCodec::kFp8E4M3 ? 254
                                                : 248;
    EXPECT_EQ(codes, want) << nameOf(c);
  }
  // Scale words: non-negative or the one canonical NaN, never all ones.
  float x[kWireGroup];
  for (float bad : {-std::numeric_limits<float>::infinity(), floatOf(0xFFFFFFFFu)}) {
    for (float& v : x) v = -1.f;
    x[5] = bad;
    uint32_t w;
    const float s = wireScaleOf(x, kWireGroup);
    memcpy(&w, &s, 4);
    EXPECT_EQ(w, 0x7FC00000u);
  }
  for (float& v : x) v = -3.f;
  EXPECT_EQ(wireScaleOf(x, kWireGroup), 3.f);
}

}  // namespace
}  // namespace tpcomm
