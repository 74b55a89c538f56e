#include "topo/topology_json.h"

#include "common/error.h"
#include "topo/cache_dir.h"

namespace tpcomm {
namespace topo {
namespace {

using json::ObjectReader;
using json::Value;

bool gpuFromJson(const Value& v, int i, GpuInfo* g, std::string* why) {
  ObjectReader r(v, "gpus[" + std::to_string(i) + "]", why);
  int64_t index = 0, numa = -1, major = 0, minor = 0;
  r.integer("index", 0, 1023, &index);
  r.string("name", &g->name);
  r.string("uuid", &g->uuid);
  r.string("pci_bus_id", &g->pci_bus_id);
  r.integer("numa_node", -1, 1 << 16, &numa);
  r.integer("cc_major", 1, 99, &major);
  r.integer("cc_minor", 0, 9, &minor);
  r.onlyKeys({"index", "name", "uuid", "pci_bus_id", "numa_node", "cc_major", "cc_minor"});
  if (!r.ok()) return false;
  if (index != i)
    return r.fail("index",
                  "is " + std::to_string(index) + ", expected its position " + std::to_string(i));
  if (normalizeBusId(g->pci_bus_id) != g->pci_bus_id)
    return r.fail("pci_bus_id", "'" + g->pci_bus_id + "' is not of the form 0000:18:00.0");
  g->index = static_cast<int>(index);
  g->numa_node = static_cast<int>(numa);
  g->cc_major = static_cast<int>(major);
  g->cc_minor = static_cast<int>(minor);
  return true;
}

bool linkFromJson(const Value& v, int i, Topology* topo, std::vector<std::vector<bool>>* seen,
                  std::string* why) {
  ObjectReader r(v, "links[" + std::to_string(i) + "]", why);
  const Value* pair = r.required("gpus");
  std::string path, works;
  int64_t count = 0;
  LinkInfo link;
  r.string("path", &path);
  r.integer("nvlink_count", 0, 1024, &count);
  r.boolean("p2p_supported", &link.p2p_supported);
  r.string("p2p_works", &works);
  r.onlyKeys({"gpus", "path", "nvlink_count", "p2p_supported", "p2p_works"});
  if (!r.ok()) return false;
  int64_t a = -1, b = -1;
  if (!pair->isArray() || pair->items().size() != 2 || !pair->items()[0].getInt64(&a) ||
      !pair->items()[1].getInt64(&b))
    return r.fail("gpus", "expected two GPU indices, e.g. [0, 1]");
  if (a < 0 || b < 0 || a >= topo->size() || b >= topo->size() || a == b)
    return r.fail("gpus", "[" + std::to_string(a) + ", " + std::to_string(b) +
                              "] is not a pair of distinct GPUs of this topology");
  if ((*seen)[a][b]) return r.fail("gpus", "pair listed twice");
  if (!parsePathClass(path, &link.path) || link.path == PathClass::kSelf)
    return r.fail("path", "'" + path +
                              "' is not one of nvlink, pcie_switch, pcie_host_bridge, "
                              "pcie_cross_socket, unknown");
  if (!parseP2pHealth(works, &link.p2p_works))
    return r.fail("p2p_works", "'" + works + "' is not one of unknown, works, broken, not_tested");
  link.nvlink_count = static_cast<int>(count);
  (*seen)[a][b] = (*seen)[b][a] = true;
  topo->setLink(static_cast<int>(a), static_cast<int>(b), link);
  return true;
}

}  // namespace

Value topologyToJson(const Topology& topo) {
  Value root = Value::object();
  root.set("tpcomm_topology", Value::integer(kTopologyFormatVersion));
  root.set("driver_version", Value::string(topo.driver_version));
  root.set("sources", Value::string(topo.sources));
  Value gpus = Value::array();
  for (const GpuInfo& g : topo.gpus) {
    Value o = Value::object();
    o.set("index", Value::integer(g.index));
    o.set("name", Value::string(g.name));
    o.set("uuid", Value::string(g.uuid));
    o.set("pci_bus_id", Value::string(g.pci_bus_id));
    o.set("numa_node", Value::integer(g.numa_node));
    o.set("cc_major", Value::integer(g.cc_major));
    o.set("cc_minor", Value::integer(g.cc_minor));
    gpus.push(std::move(o));
  }
  root.set("gpus", std::move(gpus));
  Value links = Value::array();
  for (int a = 0; a < topo.size(); ++a) {
    for (int b = a + 1; b < topo.size(); ++b) {
      const LinkInfo& l = topo.link(a, b);
      Value o = Value::object();
      Value pair = Value::array();
      pair.push(Value::integer(a));
      pair.push(Value::integer(b));
      o.set("gpus", std::move(pair));
      o.set("path", Value::string(pathClassName(l.path)));
      o.set("nvlink_count", Value::integer(l.nvlink_count));
      o.set("p2p_supported", Value::boolean(l.p2p_supported));
      o.set("p2p_works", Value::string(p2pHealthName(l.p2p_works)));
      links.push(std::move(o));
    }
  }
  root.set("links", std::move(links));
  return root;
}

std::string topologyToText(const Topology& topo) {
  return json::write(topologyToJson(topo));
}

bool topologyFromJson(const Value& v, Topology* out, std::string* why) {
  ObjectReader r(v, "", why);
  int64_t version = 0;
  Topology topo;
  if (!r.integer("tpcomm_topology", 1, 1 << 20, &version)) return false;
  if (version != kTopologyFormatVersion)
    return r.fail("tpcomm_topology", "format version " + std::to_string(version) +
                                         " is not supported (this tpcomm reads version " +
                                         std::to_string(kTopologyFormatVersion) + ")");
  r.string("driver_version", &topo.driver_version);
  r.string("sources", &topo.sources, /*allow_empty=*/true);
  const Value* gpus = r.required("gpus");
  const Value* links = r.required("links");
  r.onlyKeys({"tpcomm_topology", "driver_version", "sources", "gpus", "links"});
  if (!r.ok()) return false;
  if (!gpus->isArray() || gpus->items().empty() || gpus->items().size() > 1024)
    return r.fail("gpus", "expected an array of 1 to 1024 GPUs");
  if (!links->isArray()) return r.fail("links", "expected an array");
  const int n = static_cast<int>(gpus->items().size());
  topo.resize(n);
  for (int i = 0; i < n; ++i)
    if (!gpuFromJson(gpus->items()[i], i, &topo.gpus[i], why)) return false;
  std::vector<std::vector<bool>> seen(n, std::vector<bool>(n, false));
  for (size_t i = 0; i < links->items().size(); ++i)
    if (!linkFromJson(links->items()[i], static_cast<int>(i), &topo, &seen, why)) return false;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      if (!seen[a][b])
        return r.fail("links", "no entry for GPUs [" + std::to_string(a) + ", " +
                                   std::to_string(b) + "] (every pair must be listed)");
  if (!topo.validate(why)) return false;
  *out = std::move(topo);
  return true;
}

bool parseTopology(const std::string& text, Topology* out, std::string* why) {
  Value v;
  if (!json::parse(text, &v, why)) return false;
  return topologyFromJson(v, out, why);
}

tpcommResult_t loadTopologyFile(const std::string& path, Topology* out) {
  std::string text, why;
  if (!readTextFile(path, &text, &why)) return fail(tpcommSystemError, "%s", why.c_str());
  if (!parseTopology(text, out, &why))
    return fail(tpcommInvalidArgument, "topology file %s: %s", path.c_str(), why.c_str());
  return tpcommSuccess;
}

}  // namespace topo
}  // namespace tpcomm
