#include "topo/probe/fabric_probe_json.h"

#include <cinttypes>
#include <cstdio>

namespace tpcomm {
namespace topo {
namespace {

using json::Value;

Value numberOrNull(double x) {
  return x >= 0 ? Value::number(x) : Value();
}

// The four numbers into object o (a pair's object has a and b besides).
Value speedJson(const LinkSpeed& s, Value o = Value::object()) {
  o.set("store_gbps", numberOrNull(s.store_gbps));
  o.set("load_gbps", numberOrNull(s.load_gbps));
  o.set("copy_gbps", numberOrNull(s.copy_gbps));
  o.set("latency_us", numberOrNull(s.latency_us));
  return o;
}

// A non-negative number or null (-1) at key; false with a message naming the field.
bool measure(json::ObjectReader* r, const char* key, double* out) {
  const Value* v = r->required(key);
  if (!v) return false;
  if (v->isNull()) {
    *out = -1;
    return true;
  }
  if (!v->isNumber() || !(v->asDouble() >= 0) || v->asDouble() > 1e9)
    return r->fail(key, "expected a number >= 0 or null");
  *out = v->asDouble();
  return true;
}

// The four numbers of v; only_these: v has no other member (a pair's object also has a and b).
bool speedFromJson(const Value& v, const std::string& where, LinkSpeed* s, std::string* why,
                   bool only_these = true) {
  json::ObjectReader r(v, where, why);
  if (measure(&r, "store_gbps", &s->store_gbps) && measure(&r, "load_gbps", &s->load_gbps) &&
      measure(&r, "copy_gbps", &s->copy_gbps) && measure(&r, "latency_us", &s->latency_us) &&
      only_these)
    r.onlyKeys({"store_gbps", "load_gbps", "copy_gbps", "latency_us"});
  return r.ok();
}

bool indexList(const Value* v, json::ObjectReader* r, std::vector<int>* out) {
  if (!v->isArray()) return r->fail("gpus", "expected an array of GPU indices");
  for (const Value& g : v->items()) {
    int64_t i = 0;
    if (!g.getInt64(&i) || i < 0 || i > 63) return r->fail("gpus", "expected indices 0..63");
    out->push_back(static_cast<int>(i));
  }
  return true;
}

bool listed(const std::vector<int>& gpus, int g) {
  for (int x : gpus)
    if (x == g) return true;
  return false;
}

bool pairFromJson(const Value& v, size_t i, ProbePair* p, std::string* why) {
  const std::string where = "pairs[" + std::to_string(i) + "]";
  json::ObjectReader r(v, where, why);
  int64_t a = 0, b = 0;
  r.integer("a", 0, 63, &a);
  r.integer("b", 0, 63, &b);
  r.onlyKeys({"a", "b", "store_gbps", "load_gbps", "copy_gbps", "latency_us"});
  if (!r.ok()) return false;
  p->a = static_cast<int>(a);
  p->b = static_cast<int>(b);
  return speedFromJson(v, where, &p->speed, why, /*only_these=*/false);
}

}  // namespace

Value fabricProbeToJson(const FabricProbe& p) {
  Value root = Value::object();
  root.set("tpcomm_fabric_probe", Value::integer(kFabricProbeFormat));
  root.set("topology_key", Value::string(p.topology_key));
  root.set("fabric_hash", Value::string(p.fabric_hash));
  Value gpus = Value::array();
  for (int g : p.gpus) gpus.push(Value::integer(g));
  root.set("gpus", std::move(gpus));
  Value pairs = Value::array();
  for (const ProbePair& pair : p.pairs) {
    Value x = Value::object();
    x.set("a", Value::integer(pair.a));
    x.set("b", Value::integer(pair.b));
    pairs.push(speedJson(pair.speed, std::move(x)));
  }
  root.set("pairs", std::move(pairs));
  root.set("all_pairs", speedJson(p.all_pairs));
  root.set("host", speedJson(p.host));
  root.set("elapsed_ms", Value::number(p.elapsed_ms));
  root.set("error", Value::string(p.error));
  return root;
}

bool fabricProbeFromJson(const Value& v, FabricProbe* out, std::string* why) {
  json::ObjectReader r(v, "", why);
  int64_t version = 0;
  FabricProbe p;
  if (!r.integer("tpcomm_fabric_probe", 1, 1 << 20, &version)) return false;
  if (version != kFabricProbeFormat)
    return r.fail("tpcomm_fabric_probe", "format " + std::to_string(version) + " is not " +
                                             std::to_string(kFabricProbeFormat));
  r.string("topology_key", &p.topology_key);
  r.string("fabric_hash", &p.fabric_hash);
  const Value* gpus = r.required("gpus");
  const Value* pairs = r.required("pairs");
  const Value* all = r.required("all_pairs");
  const Value* host = r.required("host");
  const Value* elapsed = r.required("elapsed_ms");
  r.string("error", &p.error, /*allow_empty=*/true);
  r.onlyKeys({"tpcomm_fabric_probe", "topology_key", "fabric_hash", "gpus", "pairs", "all_pairs",
              "host", "elapsed_ms", "error"});
  if (!r.ok() || !indexList(gpus, &r, &p.gpus)) return false;
  if (!elapsed->isNumber() || !(elapsed->asDouble() >= 0))
    return r.fail("elapsed_ms", "expected a number >= 0");
  p.elapsed_ms = elapsed->asDouble();
  if (!pairs->isArray()) return r.fail("pairs", "expected an array");
  for (size_t i = 0; i < pairs->items().size(); ++i) {
    ProbePair pair;
    if (!pairFromJson(pairs->items()[i], i, &pair, why)) return false;
    if (!listed(p.gpus, pair.a) || !listed(p.gpus, pair.b))
      return r.fail("pairs", "pair " + std::to_string(i) + " names a GPU not in \"gpus\"");
    p.pairs.push_back(pair);
  }
  if (!speedFromJson(*all, "all_pairs", &p.all_pairs, why) ||
      !speedFromJson(*host, "host", &p.host, why))
    return false;
  *out = std::move(p);
  return true;
}

std::string probeFabricHash(const Topology& topo, const std::vector<int>& gpus) {
  std::string facts;
  for (int g : gpus) {
    if (g < 0 || g >= topo.size()) continue;
    facts += topo.gpus[g].pci_bus_id + ";";
    for (int h : gpus) {
      if (h < 0 || h >= topo.size()) continue;
      const LinkInfo& l = topo.link(g, h);
      facts += std::string(pathClassName(l.path)) + (l.p2p_supported ? "+" : "-") + ",";
    }
  }
  uint64_t hash = 1469598103934665603ull;  // FNV-1a, as Topology::key()
  for (unsigned char c : facts) hash = (hash ^ c) * 1099511628211ull;
  char buf[24];
  snprintf(buf, sizeof(buf), "%016" PRIx64, hash);
  return buf;
}

}  // namespace topo
}  // namespace tpcomm
