// The add + RMSNorm reference the GPU tests trust (tests/support/rmsnorm_reference.h): its e4m3
// encoder against CUDA's own host conversion (two independent implementations of one format),
// and the reference on a row worked out by hand.
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tests/support/rmsnorm_reference.h"

namespace tpcomm::test {
namespace {

uint8_t cudaE4m3(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

TEST(E4m3Reference, MatchesCudaOnEveryBfloat16PatternAndRandomFloats) {
  int mismatches = 0;
  auto check = [&](float x) {
    if (std::isnan(x)) return;  // NaN payloads: both give a NaN code, sign aside
    const uint8_t a = e4m3Encode(x), b = cudaE4m3(x);
    if (a != b && mismatches++ < 5)
      ADD_FAILURE() << x << ": ours 0x" << std::hex << int(a) << ", CUDA's 0x" << int(b);
  };
  for (uint32_t hi = 0; hi < 65536; ++hi) {
    float x;
    const uint32_t bits = hi << 16;
    memcpy(&x, &bits, 4);
    check(x);
  }
  uint64_t s = 1;
  for (int i = 0; i < 1000000; ++i) {
    s = mix(s);
    float x;
    const uint32_t bits = static_cast<uint32_t>(s);
    memcpy(&x, &bits, 4);
    check(x);
    check(static_cast<float>((static_cast<double>(s >> 11) / (1ull << 53)) * 1024.0 - 512.0));
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(E4m3Reference, DecodeInvertsEncodeOnEveryFiniteCode) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;  // NaN
    EXPECT_EQ(e4m3Encode(e4m3Decode(static_cast<uint8_t>(c))), c == 0x80 ? 0x80 : c) << c;
  }
  EXPECT_EQ(e4m3Decode(0x7E), 448.0);
  EXPECT_EQ(e4m3Encode(1e9), 0x7E);  // saturates
  EXPECT_EQ(e4m3Encode(-1e9), 0xFE);
  EXPECT_EQ(e4m3Decode(0x01), std::ldexp(1.0, -9));
}

TEST(RmsNormReference, OneRowByHand) {
  // ar + residual = 1, 2, 3, 4: mean square 7.5, so norm = x / sqrt(7.5 + eps) * gamma.
  const RmsNormCase c{tpcommBfloat16, 1, 4, 1e-6f, false, 0.f};
  std::vector<uint8_t> res(8), gamma(8), w(8);
  const double r[] = {0, 1, 2, 3}, g[] = {1, 1, 0.5, 2};
  for (int i = 0; i < 4; ++i) {
    fromDouble(c.dtype, r[i], res.data() + 2 * i);
    fromDouble(c.dtype, g[i], gamma.data() + 2 * i);
  }
  const RmsNormExpected e = rmsNormReference(c, {1, 1, 1, 1}, res, gamma);
  const double rs = 1 / std::sqrt(7.5 + 1e-6);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(toDouble(c.dtype, e.residual_out.data() + 2 * i), i + 1.0);
    EXPECT_NEAR(e.norm[i], (i + 1) * rs * g[i], 1e-12);
  }
  // Gemma-style weights use 1 + gamma.
  const RmsNormCase gc{tpcommBfloat16, 1, 4, 1e-6f, true, 0.f};
  const RmsNormExpected ge = rmsNormReference(gc, {1, 1, 1, 1}, res, gamma);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(ge.norm[i], (i + 1) * rs * (1 + g[i]), 1e-12);
}

TEST(RmsNormReference, ResidualRoundsTheSumThenTheAdd) {
  // FlashInfer's definition, every path's: T(T(ar) + residual). In bf16 (8 significant bits, a
  // spacing of 2 at 256) the sum 257 rounds to 256 (a tie, to even), and 256 + 0.8984375 to 256;
  // rounding once, T(257 + 0.8984375), would give 258.
  const RmsNormCase c{tpcommBfloat16, 1, 1, 1e-6f, false, 0.f};
  std::vector<uint8_t> res(2), gamma(2);
  fromDouble(c.dtype, 0.9, res.data());
  ASSERT_EQ(toDouble(c.dtype, res.data()), 0.8984375);
  fromDouble(c.dtype, 1.0, gamma.data());
  EXPECT_EQ(toDouble(c.dtype, rmsNormReference(c, {257.f}, res, gamma).residual_out.data()), 256.0);
  // An fp32 sum rounds to itself: one rounding, of the add.
  const RmsNormCase f{tpcommFloat32, 1, 1, 1e-6f, false, 0.f};
  std::vector<uint8_t> res32(4), gamma32(4);
  fromDouble(f.dtype, 0.25, res32.data());
  fromDouble(f.dtype, 1.0, gamma32.data());
  EXPECT_EQ(toDouble(f.dtype, rmsNormReference(f, {1.5f}, res32, gamma32).residual_out.data()),
            1.75);
}

}  // namespace
}  // namespace tpcomm::test
