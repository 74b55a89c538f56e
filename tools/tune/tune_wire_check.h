// `tpcomm tune`'s check of a quantized wire's result (tune_wire.cc). The codec is lossy, so the
// output is not compared with the exact reference bit for bit (tune_measure.cc does that for the
// full-precision candidates) but against the codec's error bound (kernels/layout/wire_codec.h,
// wireErrorBound) along the two-shot's path: every rank's input encoded once, their sum rounded
// to the datatype, encoded once more, decoded and rounded again. A group's scale word is the
// largest magnitude of its kWireGroup elements; not to depend on where the kernels' groups begin,
// the bound takes the largest magnitude of the three aligned groups around an element (which
// hold every group of kWireGroup consecutive elements containing it). Loose, but a garbage
// output (NaN, zeros, another call's data, a wrong scale) fails it. Header-only, so the CPU tests
// check it on the host emulation of the kernels (tests/support/wire_reference.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "kernels/layout/wire_codec.h"
#include "tests/support/host_data.h"

namespace tpcomm::cli {

// Elements of `got` (count elements of dt, every rank's output) outside the codec's bound around
// the exact (fp64) sum of `inputs` (each rank's count elements of dt); the first one in *first.
inline size_t wireWrongElements(WireCodec c, tpcommDataType_t dt, size_t count, const void* got,
                                const std::vector<std::vector<uint8_t>>& inputs,
                                size_t* first = nullptr) {
  const size_t es = test::elemSize(dt), world = inputs.size();
  const size_t groups = (count + kWireGroup - 1) / kWireGroup;
  const auto at = [&](const std::vector<uint8_t>& in, size_t i) {
    return test::toDouble(dt, in.data() + i * es);
  };
  // Per aligned group: every rank's largest magnitude, and the exact sum's (index world).
  std::vector<double> amax((world + 1) * groups, 0.0);
  test::parallelFor(groups, [&](size_t b, size_t e) {
    for (size_t g = b; g < e; ++g)
      for (size_t i = g * kWireGroup; i < std::min(count, (g + 1) * kWireGroup); ++i) {
        double sum = 0;
        for (size_t r = 0; r < world; ++r) {
          const double x = at(inputs[r], i);
          sum += x;
          amax[r * groups + g] = std::max(amax[r * groups + g], std::fabs(x));
        }
        amax[world * groups + g] = std::max(amax[world * groups + g], std::fabs(sum));
      }
  });
  // The largest of group g's neighbourhood for source r (world: the sum).
  const auto around = [&](size_t r, size_t g) {
    double m = amax[r * groups + g];
    if (g > 0) m = std::max(m, amax[r * groups + g - 1]);
    if (g + 1 < groups) m = std::max(m, amax[r * groups + g + 1]);
    return m;
  };
  // A rounding to the datatype (test::tolerance's: one ulp), twice: the sum and the output.
  const double eps = dt == tpcommFloat32 ? 0x1p-23 : dt == tpcommFloat16 ? 0x1p-10 : 0x1p-7;
  const uint8_t* out = static_cast<const uint8_t*>(got);
  std::mutex m;
  size_t bad = 0, first_bad = count;
  test::parallelFor(count, [&](size_t b, size_t e) {
    size_t n = 0, f = count;
    for (size_t i = b; i < e; ++i) {
      const size_t g = i / kWireGroup;
      double sum = 0, abs_sum = 0, first_pass = 0, first_pass_max = 0;
      for (size_t r = 0; r < world; ++r) {
        const double x = at(inputs[r], i), a = around(r, g);
        sum += x;
        abs_sum += std::fabs(x);
        first_pass += wireErrorBound(c, x, a);      // this element's first encoding
        first_pass_max += wireErrorBound(c, a, a);  // any element's of its group
      }
      // The sum as encoded the second time: off by first_pass, in a group whose scale is at most
      // the exact sums' largest magnitude plus the first pass's largest error.
      const double second_pass =
          wireErrorBound(c, std::fabs(sum) + first_pass, around(world, g) + first_pass_max);
      const double err = first_pass + second_pass;
      const double tol = 1.25 * err + 2 * eps * (std::fabs(sum) + err) +
                         static_cast<double>(world) * 0x1p-24 * abs_sum + 1e-30;
      if (!(std::fabs(test::toDouble(dt, out + i * es) - sum) <= tol) && n++ == 0) f = i;
    }
    const std::lock_guard<std::mutex> lock(m);
    bad += n;
    first_bad = std::min(first_bad, f);
  });
  if (bad && first) *first = first_bad;
  return bad;
}

}  // namespace tpcomm::cli
