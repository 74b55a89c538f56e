// The independent host reference of the add + RMSNorm (+ FP8 e4m3) epilogue (add_rmsnorm.h):
// residual_out emulated exactly (the all-reduce's fp32 sum rounded to T, an fp32 add of that and
// the residual, rounded to T: every path's definition, FlashInfer's), the norm in fp64 from the
// rounded residual, and an e4m3 encoder written from the
// format's definition (1 sign, 4 exponent bits biased by 7, 3 mantissa bits; no infinities,
// S.1111.111 is NaN, 448 the largest finite; round to nearest even, saturate), not from CUDA's
// headers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/support/host_data.h"

namespace tpcomm::test {

// Round-to-nearest-even of a non-negative value to an integer (the ties the format needs).
inline double roundHalfEven(double v) {
  const double f = std::floor(v);
  const double d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return std::fmod(f, 2.0) == 0.0 ? f : f + 1;
}

inline uint8_t e4m3Encode(double x) {
  if (std::isnan(x)) return 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(x);
  if (a >= 448.0) return sign | 0x7E;      // saturate (infinities too): nothing above 448 is finite
  constexpr double kMinNormal = 1.0 / 64;  // 2^-6
  if (a < kMinNormal) {  // subnormals: multiples of 2^-9 (code 8 is the smallest normal)
    return sign | static_cast<uint8_t>(roundHalfEven(a * 512.0));
  }
  int e = static_cast<int>(std::floor(std::log2(a)));
  // log2 may land one off at exact powers of two: fix e so that 2^e <= a < 2^(e+1).
  if (std::ldexp(1.0, e) > a) --e;
  if (std::ldexp(1.0, e + 1) <= a) ++e;
  double q = roundHalfEven((a / std::ldexp(1.0, e) - 1.0) * 8.0);
  if (q == 8) {
    q = 0;
    ++e;
  }
  if (e > 8 || (e == 8 && q > 6)) return sign | 0x7E;  // saturate to 448
  return sign | static_cast<uint8_t>(((e + 7) << 3) | static_cast<int>(q));
}

inline double e4m3Decode(uint8_t c) {
  const double s = (c & 0x80) ? -1.0 : 1.0;
  const int e = (c >> 3) & 0xF, m = c & 7;
  if (e == 0xF && m == 7) return NAN;
  if (e == 0) return s * std::ldexp(m, -9);
  return s * std::ldexp(1.0 + m / 8.0, e - 7);
}

struct RmsNormCase {
  tpcommDataType_t dtype;
  size_t rows, hidden;
  float eps;
  bool gemma;
  float scale;  // > 0: FP8 e4m3 output of norm / scale
};

struct RmsNormExpected {
  std::vector<uint8_t> residual_out;  // exact bytes
  std::vector<double> norm;           // fp64, before the output conversion (and before / scale)
};

// ar: the all-reduced values as fp32, before their rounding to T (which this applies).
inline RmsNormExpected rmsNormReference(const RmsNormCase& c, const std::vector<float>& ar,
                                        const std::vector<uint8_t>& residual_in,
                                        const std::vector<uint8_t>& gamma) {
  const size_t es = elemSize(c.dtype), n = c.rows * c.hidden;
  RmsNormExpected out;
  out.residual_out.resize(n * es);
  out.norm.resize(n);
  for (size_t r = 0; r < c.rows; ++r) {
    double sumsq = 0;
    for (size_t h = 0; h < c.hidden; ++h) {
      const size_t i = r * c.hidden + h;
      uint8_t ar_t[4];  // the all-reduce's output: its sum rounded to T
      fromDouble(c.dtype, ar[i], ar_t);
      const float s = static_cast<float>(toDouble(c.dtype, ar_t)) +
                      static_cast<float>(toDouble(c.dtype, residual_in.data() + i * es));
      fromDouble(c.dtype, s, out.residual_out.data() + i * es);
      const double q = toDouble(c.dtype, out.residual_out.data() + i * es);
      sumsq += q * q;
    }
    const double rs = 1.0 / std::sqrt(sumsq / static_cast<double>(c.hidden) + c.eps);
    for (size_t h = 0; h < c.hidden; ++h) {
      const size_t i = r * c.hidden + h;
      const double g = toDouble(c.dtype, gamma.data() + h * es);
      out.norm[i] =
          toDouble(c.dtype, out.residual_out.data() + i * es) * rs * (c.gemma ? 1 + g : g);
    }
  }
  return out;
}

// Whether a kernel's norm output element matches the fp64 norm: within one unit in the last place
// of the output format (plus the float32 evaluation's few ulps, which are far below it for the
// 16-bit types and e4m3).
inline bool normClose(const RmsNormCase& c, double want, const uint8_t* got) {
  if (c.scale > 0) {
    const double target = want / c.scale;
    const double g = e4m3Decode(*got);
    const double clamped = std::fmin(std::fmax(target, -448.0), 448.0);
    const double a = std::fabs(clamped);
    const double ulp = a < 1.0 / 64
                           ? std::ldexp(1.0, -9)
                           : std::ldexp(1.0, static_cast<int>(std::floor(std::log2(a))) - 3);
    return std::fabs(g - clamped) <= ulp * 1.01;
  }
  const double g = toDouble(c.dtype, got);
  const double rel = c.dtype == tpcommFloat32   ? 2e-5
                     : c.dtype == tpcommFloat16 ? 1.0 / 1024
                                                : 1.0 / 128;
  const double abs_floor = c.dtype == tpcommFloat16 ? 6e-8 : 1e-30;
  return std::fabs(g - want) <= rel * std::fabs(want) + abs_floor;
}

}  // namespace tpcomm::test
