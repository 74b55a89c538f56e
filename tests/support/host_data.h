// Host-side data for GPU tests and the benchmark: deterministic random inputs per (seed, rank),
// element conversions, and the independent reference (fp64 sum in rank order, then rounded to
// the datatype) with a tolerance per datatype.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "tpcomm/tpcomm.h"

namespace tpcomm::test {

inline size_t elemSize(tpcommDataType_t dt) {
  return dt == tpcommFloat32 ? 4 : 2;
}
inline const char* dtypeName(tpcommDataType_t dt) {
  return dt == tpcommFloat32 ? "float32" : dt == tpcommFloat16 ? "float16" : "bfloat16";
}

inline double toDouble(tpcommDataType_t dt, const void* p) {
  switch (dt) {
    case tpcommFloat32: {
      float f;
      memcpy(&f, p, 4);
      return f;
    }
    case tpcommFloat16: {
      __half h;
      memcpy(&h, p, 2);
      return __half2float(h);
    }
    default: {
      __nv_bfloat16 b;
      memcpy(&b, p, 2);
      return __bfloat162float(b);
    }
  }
}

inline void fromDouble(tpcommDataType_t dt, double v, void* p) {
  switch (dt) {
    case tpcommFloat32: {
      const float f = static_cast<float>(v);
      memcpy(p, &f, 4);
      break;
    }
    case tpcommFloat16: {
      const __half h = __float2half_rn(static_cast<float>(v));
      memcpy(p, &h, 2);
      break;
    }
    default: {
      const __nv_bfloat16 b = __float2bfloat16_rn(static_cast<float>(v));
      memcpy(p, &b, 2);
      break;
    }
  }
}

// splitmix64: fast, deterministic, good enough for test data.
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Runs fn(begin, end) over [0, n) on all cores (large test inputs are built and checked on the
// host; the GPU machines have many cores).
template <typename Fn>
void parallelFor(size_t n, Fn fn) {
  const size_t threads =
      std::max<size_t>(1, std::min<size_t>(std::thread::hardware_concurrency(), n / 65536 + 1));
  if (threads == 1) return fn(size_t{0}, n);
  std::vector<std::thread> pool;
  const size_t chunk = (n + threads - 1) / threads;
  for (size_t t = 0; t < threads; ++t) {
    const size_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) pool.emplace_back(fn, b, e);
  }
  for (auto& th : pool) th.join();
}

// Values in [-4, 4) with a few exact small integers and signed zeros mixed in, never the
// all-ones NaN (the tests that need it set it explicitly).
inline std::vector<uint8_t> makeInput(tpcommDataType_t dt, size_t count, uint64_t seed, int rank) {
  const size_t es = elemSize(dt);
  std::vector<uint8_t> out(count * es);
  const uint64_t base = mix(seed * 1315423911ull + static_cast<uint64_t>(rank) * 2654435761ull);
  parallelFor(count, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      const uint64_t s =
          mix(base + i);  // a function of the index: any chunking gives the same data
      double v;
      switch (s & 15) {
        case 0:
          v = static_cast<double>(static_cast<int>((s >> 8) % 9) - 4);
          break;
        case 1:
          v = ((s >> 8) & 1) ? -0.0 : 0.0;
          break;
        default:
          v = (static_cast<double>((s >> 11) & ((1ull << 52) - 1)) / (1ull << 52)) * 8.0 - 4.0;
      }
      fromDouble(dt, v, out.data() + i * es);
    }
  });
  return out;
}

// The reference: fp64 sum in rank order, rounded once to the datatype.
inline std::vector<uint8_t> reference(tpcommDataType_t dt, size_t count,
                                      const std::vector<std::vector<uint8_t>>& inputs) {
  const size_t es = elemSize(dt);
  std::vector<uint8_t> out(count * es);
  parallelFor(count, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      double acc = 0;
      for (const auto& in : inputs) acc += toDouble(dt, in.data() + i * es);
      fromDouble(dt, acc, out.data() + i * es);
    }
  });
  return out;
}

// Tolerance of one element: the kernels sum in fp32 in rank order (world-1 roundings, each at
// most half an fp32 ulp of a partial sum, bounded by sum|x|), then round once to the datatype
// (one ulp of the datatype covers rounding the slightly-off fp32 sum the other way).
inline double tolerance(tpcommDataType_t dt, double ref, double abs_sum, int world) {
  const double eps = dt == tpcommFloat32 ? 0x1p-23 : dt == tpcommFloat16 ? 0x1p-10 : 0x1p-7;
  return eps * std::fabs(ref) + world * 0x1p-24 * abs_sum + 1e-30;
}

// Number of elements of got outside the tolerance of ref (the reference of these inputs); the
// first bad index in *first. NaN matches NaN.
inline size_t countWrong(tpcommDataType_t dt, size_t count, const uint8_t* got, const uint8_t* ref,
                         const std::vector<std::vector<uint8_t>>& inputs, size_t* first = nullptr) {
  const size_t es = elemSize(dt);
  const int world = static_cast<int>(inputs.size());
  // On all cores, as the inputs and the reference are built: a 64 MiB call at world 8 checks
  // 8 x 8 x 32M elements.
  std::mutex m;
  size_t bad = 0, first_bad = count;
  parallelFor(count, [&](size_t b, size_t e) {
    size_t n = 0, f = count;
    for (size_t i = b; i < e; ++i) {
      const double g = toDouble(dt, got + i * es), r = toDouble(dt, ref + i * es);
      if (std::isnan(g) && std::isnan(r)) continue;
      double abs_sum = 0;
      for (const auto& in : inputs) abs_sum += std::fabs(toDouble(dt, in.data() + i * es));
      if (!(std::fabs(g - r) <= tolerance(dt, r, abs_sum, world))) {
        if (n++ == 0) f = i;
      }
    }
    const std::lock_guard<std::mutex> lock(m);
    bad += n;
    first_bad = std::min(first_bad, f);
  });
  if (bad && first) *first = first_bad;
  return bad;
}

}  // namespace tpcomm::test
