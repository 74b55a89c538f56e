// `tpcomm tune`'s decisions, apart from the measuring: which candidate wins at each size, how
// adjacent sizes merge into the rules of a tuning table, and how a new world's table joins the
// machine's file. Pure and header-only, so the CPU tests check it on made-up measurements.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/json.h"
#include "plan/policy.h"
#include "plan/tuning_table.h"

namespace tpcomm::cli {

// min, min*factor, ... up to max (inclusive).
inline std::vector<size_t> sweepSizes(size_t min_bytes, size_t max_bytes, size_t factor) {
  std::vector<size_t> s;
  if (min_bytes == 0 || factor < 2) return s;
  for (size_t b = min_bytes; b <= max_bytes; b *= factor) {
    s.push_back(b);
    if (b > SIZE_MAX / factor) break;
  }
  return s;
}

// The candidates `tpcomm tune` measures, in column order: every algorithm of a library with
// num_algos of them (tpcommNumAlgos), Auto left out and NCCL last, so that an algorithm added to
// tpcomm.h is measured without a change here.
inline std::vector<int> candidatesFor(int num_algos) {
  std::vector<int> c;
  for (int a = tpcommAlgoAuto + 1; a < num_algos; ++a)
    if (a != tpcommAlgoNccl) c.push_back(a);
  c.push_back(tpcommAlgoNccl);
  return c;
}

// Whether a communicator left to choose on `fabric` can run `algo`, i.e. whether a table for that
// fabric may name it: peer-memory algorithms need P2P, and the host-memory transport is set up
// only where P2P does not work (or is turned off: TPCOMM_TRANSPORT=host gives fabric host).
// Island runs forced on any P2P fabric, but auto picks it only over PCIe (two islands). A
// forced-only algorithm (oneshot_ce) is measured for the report but never eligible: auto does not
// obey a table row that names it (isForcedOnlyAlgo, plan/policy.h).
inline bool eligibleOn(Fabric fabric, int algo) {
  if (algo == tpcommAlgoNccl) return true;
  if (isForcedOnlyAlgo(algo)) return false;
  if (isIslandAlgo(algo)) return fabric == Fabric::kPcie;
  return fabric == Fabric::kHost ? isHostAlgo(algo) : !isHostAlgo(algo);
}

inline std::vector<TuningSample> eligibleSamples(const std::vector<TuningSample>& samples,
                                                 Fabric fabric) {
  std::vector<TuningSample> out;
  for (const TuningSample& s : samples)
    if (eligibleOn(fabric, s.algo)) out.push_back(s);
  return out;
}

struct SizePick {
  size_t bytes = 0;
  int algo = -1;     // the pick; -1: nothing was measured at this size
  double us = 0;     // its time
  int fastest = -1;  // the fastest candidate (may differ from the pick by at most `tie`)
  double fastest_us = 0;
  double nccl_us = -1;  // NCCL's time; < 0 when NCCL was not measured
};

// Best time per algorithm at (world, bytes).
inline std::map<int, double> timesAt(const std::vector<TuningSample>& samples, int world,
                                     size_t bytes) {
  std::map<int, double> t;
  for (const TuningSample& s : samples)
    if (s.world == world && s.bytes == bytes && (!t.count(s.algo) || s.us < t[s.algo]))
      t[s.algo] = s.us;
  return t;
}

// Per size (ascending), the candidate to use. The fastest wins, except among candidates within
// `tie` (a fraction, e.g. 0.02) of the fastest, which measurement noise cannot tell apart: there
// the previous size's tpcomm pick is kept (fewer rules), else the fastest tpcomm algorithm is
// taken. NCCL is picked only where it beats every tpcomm algorithm by more than `tie`, and a pick
// is never slower than the fastest candidate (NCCL included) by more than `tie`.
inline std::vector<SizePick> pickPerSize(const std::vector<TuningSample>& samples, int world,
                                         const std::vector<size_t>& sizes, double tie) {
  std::vector<SizePick> picks;
  int previous = -1;
  for (size_t bytes : sizes) {
    SizePick p;
    p.bytes = bytes;
    const std::map<int, double> t = timesAt(samples, world, bytes);
    for (const auto& [algo, us] : t)
      if (p.fastest < 0 || us < p.fastest_us) {
        p.fastest = algo;
        p.fastest_us = us;
      }
    if (t.count(tpcommAlgoNccl)) p.nccl_us = t.at(tpcommAlgoNccl);
    if (p.fastest >= 0) {
      const double limit = p.fastest_us * (1.0 + tie);
      int best_own = -1;  // fastest tpcomm algorithm within the tie
      for (const auto& [algo, us] : t)
        if (algo != tpcommAlgoNccl && us <= limit && (best_own < 0 || us < t.at(best_own)))
          best_own = algo;
      if (previous >= 0 && previous != tpcommAlgoNccl && t.count(previous) &&
          t.at(previous) <= limit)
        p.algo = previous;
      else if (best_own >= 0)
        p.algo = best_own;
      else
        p.algo = p.fastest;
      p.us = t.at(p.algo);
      previous = p.algo;
    }
    picks.push_back(p);
  }
  return picks;
}

// Adjacent sizes with the same pick become one rule whose max_bytes is the largest of them; the
// last rule covers every larger size (SIZE_MAX), the first every smaller one. Sizes where nothing
// was measured go to the next rule.
inline SizeTable mergeRules(const std::vector<SizePick>& picks) {
  SizeTable rules;
  for (const SizePick& p : picks) {
    if (p.algo < 0) continue;
    if (!rules.empty() && rules.back().algo == p.algo)
      rules.back().max_bytes = p.bytes;
    else
      rules.push_back({p.bytes, p.algo});
  }
  if (!rules.empty()) rules.back().max_bytes = SIZE_MAX;
  return rules;
}

// The "measured" record of one world: {"world", "dtype", "mode", "sizes": [...],
// "us": {"<algo>": [us or null per size]}, "picked": [algo or null per size]}.
inline json::Value measuredWorldJson(const std::vector<TuningSample>& samples, int world,
                                     const std::vector<size_t>& sizes,
                                     const std::vector<int>& candidates,
                                     const std::vector<SizePick>& picks, const std::string& dtype) {
  using json::Value;
  Value o = Value::object();
  o.set("world", Value::integer(world));
  o.set("dtype", Value::string(dtype));
  o.set("mode", Value::string("graph"));
  Value s = Value::array();
  for (size_t b : sizes) s.push(Value::unsignedInteger(b));
  o.set("sizes", std::move(s));
  Value us = Value::object();
  for (int a : candidates) {
    Value row = Value::array();
    for (size_t b : sizes) {
      const std::map<int, double> t = timesAt(samples, world, b);
      row.push(t.count(a) ? Value::number(static_cast<int64_t>(t.at(a) * 100 + 0.5) / 100.0)
                          : Value());
    }
    us.set(tpcommAlgoName(a), std::move(row));
  }
  o.set("us", std::move(us));
  Value picked = Value::array();
  for (const SizePick& p : picks)
    picked.push(p.algo >= 0 ? Value::string(tpcommAlgoName(p.algo)) : Value());
  o.set("picked", std::move(picked));
  return o;
}

// The file to write: the new world's entry (its rules, the fused crossover) and measurements, plus
// the other worlds of `previous` (the file already there for this machine) when it was measured on
// the same fabric.
inline TuningTable mergeTable(const TuningTable* previous, const std::string& key, Fabric fabric,
                              WorldTable entry, json::Value measured_world) {
  const int world = entry.world;
  TuningTable t;
  t.topology_key = key;
  t.fabric = fabric;
  json::Value worlds = json::Value::array();
  const bool keep = previous && previous->topology_key == key && previous->fabric == fabric;
  if (keep) {
    for (const WorldTable& w : previous->tables)
      if (w.world != world) t.tables.push_back(w);
    const json::Value* old =
        previous->measured.isObject() ? previous->measured.find("worlds") : nullptr;
    if (old && old->isArray())
      for (const json::Value& m : old->items()) {
        const json::Value* w = m.isObject() ? m.find("world") : nullptr;
        int64_t n = 0;
        if (w && w->getInt64(&n) && n != world) worlds.push(m);
      }
  }
  t.tables.push_back(std::move(entry));
  std::sort(t.tables.begin(), t.tables.end(),
            [](const WorldTable& a, const WorldTable& b) { return a.world < b.world; });
  worlds.push(std::move(measured_world));
  t.measured = json::Value::object();
  t.measured.set("tool", json::Value::string("tpcomm tune"));
  t.measured.set("worlds", std::move(worlds));
  return t;
}

}  // namespace tpcomm::cli
