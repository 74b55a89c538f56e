// `tpcomm tune`'s decisions for the fused call (tpcommAllReduceAddRmsNorm), apart from the
// measuring (tune_fused.h): from which row count the fused two-shot takes over from the fused
// one-shot (plan/fused_plan.cc, twoShotRows), and below which row count the unfused pair runs
// instead (fusedRules). Pure and header-only, so the CPU tests check it on made-up
// measurements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/json.h"
#include "tools/tune/tune_crossover.h"

namespace tpcomm::cli {

// One row count's times (us per call; < 0: not measured, or the form did not run there: beyond
// one step of the one-shot its "one-shot" goes unfused).
struct FusedPoint {
  size_t rows = 0;
  double oneshot_us = -1;  // the fused one-shot (fused_twoshot_rows=0)
  double twoshot_us = -1;  // the fused two-shot (fused_twoshot_rows=1)
  double pair_us = -1;     // the unfused pair (variant=add_rmsnorm): shown, not a candidate
  std::string oneshot_variant, twoshot_variant, pair_variant;  // what each ran
};

// The fused call's points are keyed by their row counts.
inline size_t rowsOf(const FusedPoint& p) {
  return p.rows;
}

// The tuning table's fused_twoshot_rows from points ascending by rows: the smallest measured row
// count from which the two-shot beats the one-shot by more than `tie` at every measured count
// (a tie keeps the one-shot: one phase, not two); SIZE_MAX when the one-shot holds at the largest
// count measured; 0 when no count has both.
inline size_t fusedTwoShotRows(const std::vector<FusedPoint>& points, double tie) {
  bool compared = false, everywhere = false;
  const size_t from = holdsFrom(
      points, rowsOf, [](const FusedPoint& p) { return p.oneshot_us >= 0 && p.twoshot_us >= 0; },
      [tie](const FusedPoint& p) { return p.twoshot_us * (1.0 + tie) < p.oneshot_us; }, &compared,
      &everywhere);
  if (!compared) return 0;
  return from > 0 ? from : SIZE_MAX;
}

// The time of the fused form the planner takes at p.rows once the table says two-shot from
// `twoshot_rows` (0: the default's, which only the measured forms stand in for here): the
// two-shot from there on, and wherever the one-shot did not run (beyond its step). < 0: none ran.
inline double plannedFusedUs(const FusedPoint& p, size_t twoshot_rows) {
  const bool two = (twoshot_rows > 0 && p.rows >= twoshot_rows) || p.oneshot_us < 0;
  return two ? p.twoshot_us : p.oneshot_us;
}

// The tuning table's fused_unfused_below: the smallest measured row count from which the fused
// form the planner takes is no slower than the unfused pair x (1 + tie) at every measured count
// (a tie keeps the fused call: one kernel, one launch); 0 when that holds from the smallest count
// (fuse everywhere) or nothing compares; SIZE_MAX when the pair wins at the largest count.
inline size_t fusedUnfusedBelow(const std::vector<FusedPoint>& points, size_t twoshot_rows,
                                double tie) {
  bool compared = false, everywhere = false;
  const size_t from = holdsFrom(
      points, rowsOf,
      [twoshot_rows](const FusedPoint& p) {
        return plannedFusedUs(p, twoshot_rows) >= 0 && p.pair_us >= 0;
      },
      [twoshot_rows, tie](const FusedPoint& p) {
        return plannedFusedUs(p, twoshot_rows) <= p.pair_us * (1.0 + tie);
      },
      &compared, &everywhere);
  if (!compared || everywhere) return 0;  // nothing to compare, or fused everywhere
  return from > 0 ? from : SIZE_MAX;      // the pair won at the largest count: never fused
}

// The "fused" record of a world's measurements: {"hidden", "rows": [...], "us": {"oneshot": [...],
// "twoshot": [...], "unfused": [...]}, "variants": {...: [...]}, "twoshot_rows": N or "inf"}.
inline json::Value fusedMeasuredJson(const std::vector<FusedPoint>& points, size_t hidden,
                                     size_t twoshot_rows, size_t unfused_below = 0) {
  using json::Value;
  const auto us = [](double v) {
    return v < 0 ? Value() : Value::number(static_cast<int64_t>(v * 100 + 0.5) / 100.0);
  };
  const auto name = [](const std::string& s) { return s.empty() ? Value() : Value::string(s); };
  Value rows = Value::array(), one = Value::array(), two = Value::array(), pair = Value::array();
  Value one_v = Value::array(), two_v = Value::array(), pair_v = Value::array();
  for (const FusedPoint& p : points) {
    rows.push(Value::unsignedInteger(p.rows));
    one.push(us(p.oneshot_us));
    two.push(us(p.twoshot_us));
    pair.push(us(p.pair_us));
    one_v.push(name(p.oneshot_variant));
    two_v.push(name(p.twoshot_variant));
    pair_v.push(name(p.pair_variant));
  }
  Value times = Value::object(), variants = Value::object();
  times.set("oneshot", std::move(one));
  times.set("twoshot", std::move(two));
  times.set("unfused", std::move(pair));
  variants.set("oneshot", std::move(one_v));
  variants.set("twoshot", std::move(two_v));
  variants.set("unfused", std::move(pair_v));
  Value o = Value::object();
  o.set("hidden", Value::unsignedInteger(hidden));
  o.set("rows", std::move(rows));
  o.set("us", std::move(times));
  o.set("variants", std::move(variants));
  // A row count as the tuning table writes it: a count, "inf", or null where nothing was picked.
  const auto rows_value = [](size_t n) {
    return n == SIZE_MAX ? Value::string("inf") : n == 0 ? Value() : Value::unsignedInteger(n);
  };
  o.set("twoshot_rows", rows_value(twoshot_rows));
  o.set("unfused_below", rows_value(unfused_below));
  return o;
}

}  // namespace tpcomm::cli
