// `tpcomm tune`'s decisions for the quantized wire (issue 37; plan/wire_plan.cc), apart from the
// measuring (tune_wire.h): the form an opted-in all-reduce takes on this fabric, and from which
// size each codec measured faster than the best full-precision candidate (the tuning table's
// wire_from). Pure and header-only, so the CPU tests check it on made-up measurements.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/json.h"
#include "plan/knobs.h"
#include "plan/planner.h"
#include "plan/policy.h"
#include "plan/tuning_table.h"
#include "tools/tune/tune_crossover.h"
#include "topo/probe/fabric_verdict.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm::cli {

// The form wireRules gives an opted-in all-reduce on `fabric` (with the fabric probe's verdict),
// as the algorithm its measuring communicators are forced to: the host form over host memory,
// the pull form on PCIe whose peer writes collapse, the push form on other PCIe. Over NVLink the
// wire never runs by itself: tpcommAlgoAuto and *why says so, except with share_gpu (tune tested
// on one GPU), where the push form runs so that the path is exercised.
inline int wireForm(Fabric fabric, FabricVerdict verdict, bool share_gpu, std::string* why) {
  const int form = wireFormOf(fabric, verdict);
  if (form != tpcommAlgoAuto) return form;
  if (share_gpu) return tpcommAlgoTwoShot;
  *why =
      "over NVLink the quantized wire never runs by itself (only under a forced two-shot), so "
      "there is no crossover to measure";
  return tpcommAlgoAuto;
}

// One size's times (us per call; < 0: not measured).
struct WirePoint {
  size_t bytes = 0;
  double wire_us = -1;  // the codec's form
  double full_us = -1;  // the best full-precision candidate eligible on this fabric
};

// The best full-precision candidate at (world, bytes) among `eligible` (eligibleSamples: what a
// communicator on this fabric can run, NCCL included); algo -1 where none was measured.
struct FullPrecision {
  int algo = -1;
  double us = -1;
};
inline FullPrecision bestFullPrecision(const std::vector<TuningSample>& eligible, int world,
                                       size_t bytes) {
  FullPrecision best;
  for (const TuningSample& s : eligible)
    if (s.world == world && s.bytes == bytes && (best.algo < 0 || s.us < best.us)) {
      best.algo = s.algo;
      best.us = s.us;
    }
  return best;
}

// A codec's points: its time at each size (wire_us[i] at sizes[i]) beside the best full-precision
// time there.
inline std::vector<WirePoint> wirePoints(const std::vector<size_t>& sizes,
                                         const std::vector<double>& wire_us,
                                         const std::vector<TuningSample>& eligible, int world) {
  std::vector<WirePoint> points;
  for (size_t i = 0; i < sizes.size(); ++i)
    points.push_back({sizes[i], i < wire_us.size() ? wire_us[i] : -1,
                      bestFullPrecision(eligible, world, sizes[i]).us});
  return points;
}

// The tuning table's wire_from for one codec: the smallest measured size from which the codec
// beats the best full-precision candidate by more than `tie` (a fraction) at that size and every
// larger measured one (a tie keeps full precision: exact, and no faster); SIZE_MAX when it does
// not at the largest size measured; 0 when no size has both times (not measured). Sizes where
// either time is missing are skipped.
inline size_t wireFrom(std::vector<WirePoint> points, double tie) {
  std::sort(points.begin(), points.end(),
            [](const WirePoint& a, const WirePoint& b) { return a.bytes < b.bytes; });
  bool compared = false, everywhere = false;
  const size_t from = holdsFrom(
      points, [](const WirePoint& p) { return p.bytes; },
      [](const WirePoint& p) { return p.wire_us >= 0 && p.full_us >= 0; },
      [tie](const WirePoint& p) { return p.wire_us * (1.0 + tie) < p.full_us; }, &compared,
      &everywhere);
  if (!compared) return 0;
  return from > 0 ? from : SIZE_MAX;
}

// One codec's measurements, as tune_wire.cc gives them.
struct WireRun {
  int codec = 0;                      // WireCodec (kernels/layout/wire_codec.h)
  std::vector<double> us;             // per size; < 0: not measured
  std::vector<std::string> variants;  // what ran per size ("" where nothing did)
};

// The "wire" record of a world's measurements: {"form", "sizes": [...], "full_precision":
// {"algo": [...], "us": [...]}, "us": {"<codec>": [us or null, ...]}, "variants": {...},
// "wire_from": {"<codec>": bytes, "inf" or null}}.
inline json::Value wireMeasuredJson(int form, const std::vector<size_t>& sizes,
                                    const std::vector<WireRun>& runs,
                                    const std::vector<TuningSample>& eligible, int world,
                                    const size_t* wire_from) {
  using json::Value;
  const auto us = [](double v) {
    return v < 0 ? Value() : Value::number(static_cast<int64_t>(v * 100 + 0.5) / 100.0);
  };
  const auto bytes = [](size_t n) {
    return n == SIZE_MAX ? Value::string("inf") : n == 0 ? Value() : Value::unsignedInteger(n);
  };
  Value o = Value::object();
  o.set("form", Value::string(tpcommAlgoName(form)));
  Value s = Value::array(), full_algo = Value::array(), full_us = Value::array();
  for (size_t b : sizes) {
    s.push(Value::unsignedInteger(b));
    const FullPrecision f = bestFullPrecision(eligible, world, b);
    full_algo.push(f.algo >= 0 ? Value::string(tpcommAlgoName(f.algo)) : Value());
    full_us.push(us(f.us));
  }
  o.set("sizes", std::move(s));
  Value full = Value::object();
  full.set("algo", std::move(full_algo));
  full.set("us", std::move(full_us));
  o.set("full_precision", std::move(full));
  Value times = Value::object(), variants = Value::object(), from = Value::object();
  for (const WireRun& r : runs) {
    const char* name = wireCodecName(r.codec);
    Value t = Value::array(), v = Value::array();
    for (size_t i = 0; i < sizes.size(); ++i) {
      t.push(us(i < r.us.size() ? r.us[i] : -1));
      v.push(i < r.variants.size() && !r.variants[i].empty() ? Value::string(r.variants[i])
                                                             : Value());
    }
    times.set(name, std::move(t));
    variants.set(name, std::move(v));
    from.set(name, bytes(wire_from[r.codec]));
  }
  o.set("us", std::move(times));
  o.set("variants", std::move(variants));
  o.set("wire_from", std::move(from));
  return o;
}

}  // namespace tpcomm::cli
