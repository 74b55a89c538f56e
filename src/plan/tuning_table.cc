#include "plan/tuning_table.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <set>

#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "common/trusted_file.h"
#include "kernels/layout/wire_codec.h"
#include "topo/cache_dir.h"

namespace tpcomm {
namespace {

// The names in the file; fixed here so the format does not follow display names elsewhere.
struct FabricName {
  Fabric fabric;
  const char* name;
};
const FabricName kFabricNames[] = {
    {Fabric::kNvlink, "nvlink"}, {Fabric::kPcie, "pcie"}, {Fabric::kHost, "host"}};

const char* fabricFileName(Fabric f) {
  for (const FabricName& n : kFabricNames)
    if (n.fabric == f) return n.name;
  return "?";
}

bool parseFabric(const std::string& s, Fabric* out) {
  for (const FabricName& n : kFabricNames)
    if (s == n.name) {
      *out = n.fabric;
      return true;
    }
  return false;
}

bool reject(std::string* why, const std::string& reason) {
  *why = reason;
  return false;
}

bool needsP2p(int algo) {
  return algo == tpcommAlgoOneShot || algo == tpcommAlgoTwoShot || isIslandAlgo(algo) ||
         isPullAlgo(algo);
}

std::string algoText(int algo) {
  const char* name =
      (algo > tpcommAlgoAuto && algo < tpcommNumAlgos) ? tpcommAlgoName(algo) : nullptr;
  return name ? name : "algorithm " + std::to_string(algo);
}

bool rulesFromJson(const json::Value& v, const std::string& where, SizeTable* out,
                   std::string* why) {
  if (!v.isArray() || v.items().empty())
    return reject(why, where + ": expected a non-empty array of rules");
  for (size_t i = 0; i < v.items().size(); ++i) {
    json::ObjectReader r(v.items()[i], where + "[" + std::to_string(i) + "]", why);
    const json::Value* max = r.required("max_bytes");
    std::string name;
    r.string("algo", &name);
    r.onlyKeys({"max_bytes", "algo"});
    if (!r.ok()) return false;
    SizeRule rule{0, tpcommAlgoAuto};
    uint64_t bytes = 0;
    if (max->isString() && max->asString() == "inf") {
      rule.max_bytes = SIZE_MAX;
    } else if (max->getUint64(&bytes) && bytes > 0 && bytes <= SIZE_MAX) {
      rule.max_bytes = static_cast<size_t>(bytes);
    } else {
      return r.fail("max_bytes", "expected a positive integer or \"inf\"");
    }
    rule.algo = parseAlgoName(name);
    if (rule.algo <= tpcommAlgoAuto)
      return r.fail("algo", "'" + name +
                                "' is not an algorithm (oneshot, twoshot, nccl, host_oneshot, "
                                "host_twoshot, host_bulk, island)");
    out->push_back(rule);
  }
  return true;
}

// A world's fused_twoshot_rows or fused_unfused_below: a row count the planner can take (1 ..
// 2^30, as the knob), or "inf".
bool fusedRowsFromJson(const json::Value& v, size_t* out) {
  uint64_t rows = 0;
  if (v.isString() && v.asString() == "inf") {
    *out = SIZE_MAX;
    return true;
  }
  if (!v.getUint64(&rows) || rows == 0 || rows > (uint64_t{1} << 30)) return false;
  *out = static_cast<size_t>(rows);
  return true;
}

json::Value rowsJson(size_t rows) {
  return rows == SIZE_MAX ? json::Value::string("inf") : json::Value::unsignedInteger(rows);
}

// The codecs' names in wire_from, by WireCodec (kernels/layout/wire_codec.h); fixed here, as the
// fabrics', so the format does not follow the knob's names (plan/knobs.h, wireCodecName).
const char* const kWireFileNames[kWireCodecs] = {nullptr, "int8", "int4", "fp8", "fp8_e5m2"};

int wireFileCodec(const std::string& name) {
  for (int c = 1; c < kWireCodecs; ++c)
    if (name == kWireFileNames[c]) return c;
  return 0;
}

// A world's wire_from: {"<codec>": bytes (a positive integer) or "inf", ...}, each codec at most
// once (the reader refuses duplicate names).
bool wireFromJson(const json::Value& v, const std::string& where, size_t* out, std::string* why) {
  json::ObjectReader r(v, where, why);
  if (!r.ok()) return false;
  for (const json::Value::Member& m : v.members()) {
    const int codec = wireFileCodec(m.first);
    if (codec == 0)
      return r.fail(m.first, "not a codec of the quantized wire (int8, int4, fp8, fp8_e5m2)");
    uint64_t bytes = 0;
    if (m.second.isString() && m.second.asString() == "inf")
      out[codec] = SIZE_MAX;
    else if (m.second.getUint64(&bytes) && bytes > 0 && bytes <= SIZE_MAX)
      out[codec] = static_cast<size_t>(bytes);
    else
      return r.fail(m.first, "expected a positive byte count or \"inf\"");
  }
  return true;
}

json::Value wireFromValue(const size_t* from) {
  json::Value o = json::Value::object();
  for (int c = 1; c < kWireCodecs; ++c)
    if (from[c] > 0) o.set(kWireFileNames[c], rowsJson(from[c]));
  return o;
}

}  // namespace

const SizeTable* TuningTable::tableFor(int world) const {
  for (const WorldTable& t : tables)
    if (t.world == world) return &t.rules;
  return nullptr;
}

const SizeTable* TuningTable::tableFor(int world, Fabric f) const {
  return f == fabric ? tableFor(world) : nullptr;
}

const WorldTable* TuningTable::worldFor(int world, Fabric f) const {
  if (f != fabric) return nullptr;
  for (const WorldTable& t : tables)
    if (t.world == world) return &t;
  return nullptr;
}

bool validateTuningTable(const TuningTable& table, std::string* why) {
  if (table.topology_key.empty()) return reject(why, "topology_key: must not be empty");
  if (table.tables.empty()) return reject(why, "tables: no table");
  std::set<int> worlds;
  for (size_t t = 0; t < table.tables.size(); ++t) {
    const WorldTable& wt = table.tables[t];
    const std::string at = "tables[" + std::to_string(t) + "]";
    if (wt.world < 2 || wt.world > 64)
      return reject(why, at + ".world: " + std::to_string(wt.world) + " is out of range 2..64");
    if (!worlds.insert(wt.world).second)
      return reject(why, at + ".world: " + std::to_string(wt.world) + " has two tables");
    if (wt.rules.empty()) return reject(why, at + ".rules: empty");
    for (size_t i = 0; i < wt.rules.size(); ++i) {
      const SizeRule& r = wt.rules[i];
      const std::string rat = at + ".rules[" + std::to_string(i) + "]";
      if (r.algo <= tpcommAlgoAuto || r.algo >= tpcommNumAlgos)
        return reject(why, rat + ".algo: " + std::to_string(r.algo) + " is not an algorithm");
      if (table.fabric == Fabric::kHost && needsP2p(r.algo))
        return reject(why,
                      rat + ".algo: " + algoText(r.algo) + " needs P2P, the table is for host");
      if (isIslandAlgo(r.algo) && !islandWorld(wt.world))
        return reject(why,
                      rat + ".algo: " + algoText(r.algo) + " needs an even world of at least 4");
      if (r.max_bytes == 0) return reject(why, rat + ".max_bytes: must be positive");
      if (i > 0 && r.max_bytes <= wt.rules[i - 1].max_bytes)
        return reject(why, rat + ".max_bytes: not above the previous rule's (sizes must increase)");
    }
    if (wt.rules.back().max_bytes != SIZE_MAX)
      return reject(why,
                    at + ".rules: the last rule must cover every size (\"max_bytes\": \"inf\")");
    if (wt.wire_from[0] != 0)
      return reject(why, at + ".wire_from: codec 0 (none) has no crossover");
  }
  return true;
}

bool parseTuningTable(const std::string& text, const std::string& expected_key, TuningTable* out,
                      std::string* why) {
  json::Value root;
  if (!json::parse(text, &root, why)) return false;
  json::ObjectReader r(root, "", why);
  int64_t version = 0;
  TuningTable t;
  std::string fabric;
  if (!r.integer("tpcomm_tuning", 1, 1 << 20, &version)) return false;
  if (version != kTuningFormatVersion)
    return r.fail("tpcomm_tuning", "format version " + std::to_string(version) +
                                       " is not supported (this tpcomm reads version " +
                                       std::to_string(kTuningFormatVersion) + ")");
  r.string("topology_key", &t.topology_key);
  r.string("fabric", &fabric);
  const json::Value* tables = r.required("tables");
  r.onlyKeys({"tpcomm_tuning", "topology_key", "fabric", "tables", "measured"});
  if (!r.ok()) return false;
  if (t.topology_key != expected_key)
    return r.fail("topology_key", "'" + t.topology_key + "' is not this machine's ('" +
                                      expected_key +
                                      "'): measured on other GPUs or another driver");
  if (!parseFabric(fabric, &t.fabric))
    return r.fail("fabric", "'" + fabric + "' is not nvlink, pcie or host");
  if (!tables->isArray()) return r.fail("tables", "expected an array");
  for (size_t i = 0; i < tables->items().size(); ++i) {
    const std::string at = "tables[" + std::to_string(i) + "]";
    json::ObjectReader tr(tables->items()[i], at, why);
    int64_t world = 0;
    tr.integer("world", 2, 64, &world);
    const json::Value* rules = tr.required("rules");
    const json::Value* fused = tables->items()[i].find("fused_twoshot_rows");
    const json::Value* unfused = tables->items()[i].find("fused_unfused_below");
    const json::Value* wire_from = tables->items()[i].find("wire_from");
    tr.onlyKeys({"world", "rules", "fused_twoshot_rows", "fused_unfused_below", "wire_from"});
    if (!tr.ok()) return false;
    WorldTable wt;
    wt.world = static_cast<int>(world);
    if (!rulesFromJson(*rules, at + ".rules", &wt.rules, why)) return false;
    if (fused && !fusedRowsFromJson(*fused, &wt.fused_twoshot_rows))
      return tr.fail("fused_twoshot_rows", "expected a row count from 1 to 2^30 or \"inf\"");
    if (unfused && !fusedRowsFromJson(*unfused, &wt.fused_unfused_below))
      return tr.fail("fused_unfused_below", "expected a row count from 1 to 2^30 or \"inf\"");
    if (wire_from && !wireFromJson(*wire_from, tr.where("wire_from"), wt.wire_from, why))
      return false;
    t.tables.push_back(std::move(wt));
  }
  if (const json::Value* m = root.find("measured")) t.measured = *m;
  if (!validateTuningTable(t, why)) return false;
  *out = std::move(t);
  return true;
}

std::string tuningTableText(const TuningTable& table) {
  json::Value root = json::Value::object();
  root.set("tpcomm_tuning", json::Value::integer(kTuningFormatVersion));
  root.set("topology_key", json::Value::string(table.topology_key));
  root.set("fabric", json::Value::string(fabricFileName(table.fabric)));
  json::Value tables = json::Value::array();
  for (const WorldTable& wt : table.tables) {
    json::Value t = json::Value::object();
    t.set("world", json::Value::integer(wt.world));
    json::Value rules = json::Value::array();
    for (const SizeRule& r : wt.rules) {
      json::Value o = json::Value::object();
      o.set("max_bytes", r.max_bytes == SIZE_MAX ? json::Value::string("inf")
                                                 : json::Value::unsignedInteger(r.max_bytes));
      o.set("algo", json::Value::string(algoText(r.algo)));
      rules.push(std::move(o));
    }
    t.set("rules", std::move(rules));
    if (wt.fused_twoshot_rows > 0) t.set("fused_twoshot_rows", rowsJson(wt.fused_twoshot_rows));
    if (wt.fused_unfused_below > 0) t.set("fused_unfused_below", rowsJson(wt.fused_unfused_below));
    const json::Value wire_from = wireFromValue(wt.wire_from);
    if (!wire_from.members().empty()) t.set("wire_from", wire_from);
    tables.push(std::move(t));
  }
  root.set("tables", std::move(tables));
  if (!table.measured.isNull()) root.set("measured", table.measured);
  return json::write(root);
}

TuningLoad loadTuningTable(const std::string& path, const std::string& expected_key,
                           TuningTable* out, std::string* why) {
  if (path.empty()) {
    *why = "no tuning file path (no cache folder and TPCOMM_TUNING_FILE unset)";
    return TuningLoad::kMissing;
  }
  std::string text;
  const TrustedRead read = readTrustedFile(path, &text, why);
  if (read == TrustedRead::kMissing) {
    TPCOMM_INFO(TUNING, "no tuning table at %s: built-in defaults (run `tpcomm tune`)",
                path.c_str());
    return TuningLoad::kMissing;
  }
  if (read == TrustedRead::kRead && parseTuningTable(text, expected_key, out, why)) {
    out->path = path;
    TPCOMM_INFO(TUNING, "tuning table %s (%zu world sizes, fabric %s)", path.c_str(),
                out->tables.size(), fabricFileName(out->fabric));
    return TuningLoad::kLoaded;
  }
  TPCOMM_WARN(TUNING, "ignoring tuning table %s: %s; using the built-in defaults", path.c_str(),
              why->c_str());
  return TuningLoad::kRejected;
}

tpcommResult_t saveTuningTable(const std::string& path, const TuningTable& table) {
  std::string why;
  if (!validateTuningTable(table, &why))
    return fail(tpcommInvalidArgument, "tuning table not saved to %s: %s", path.c_str(),
                why.c_str());
  return topo::writeTextFileAtomic(path, tuningTableText(table), 0600);
}

std::string defaultTuningPath(const std::string& topology_key) {
  if (!env().tuning_file.empty()) return env().tuning_file;
  const std::string dir = topo::userCacheDir();
  return dir.empty() ? "" : dir + "/tuning-" + topology_key + ".json";
}

int tableAlgoFor(const SizeTable& table, size_t bytes) {
  for (const SizeRule& r : table)
    if (bytes <= r.max_bytes) return r.algo;
  return -1;
}

bool tableNeverSlowerThanNccl(const TuningTable& table, const std::vector<TuningSample>& samples,
                              double tolerance, std::string* why) {
  // Best time per (world, bytes) and algorithm.
  std::map<std::pair<int, size_t>, std::map<int, double>> best;
  for (const TuningSample& s : samples) {
    auto& slot = best[{s.world, s.bytes}];
    auto it = slot.find(s.algo);
    if (it == slot.end() || s.us < it->second) slot[s.algo] = s.us;
  }
  for (const auto& [point, times] : best) {
    const auto nccl = times.find(tpcommAlgoNccl);
    const SizeTable* rules = table.tableFor(point.first);
    if (nccl == times.end() || !rules) continue;
    const int algo = tableAlgoFor(*rules, point.second);
    const std::string at =
        "world " + std::to_string(point.first) + ", " + std::to_string(point.second) + " bytes: ";
    if (algo == tpcommAlgoNccl) continue;
    const auto mine = times.find(algo);
    if (mine == times.end())
      return reject(why, at + "the table picks " + algoText(algo) + ", which was not measured");
    if (mine->second > nccl->second * (1.0 + tolerance)) {
      char buf[96];
      snprintf(buf, sizeof(buf), " takes %.2f us, NCCL %.2f us", mine->second, nccl->second);
      return reject(why, at + algoText(algo) + buf);
    }
  }
  return true;
}

}  // namespace tpcomm
