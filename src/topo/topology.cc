#include "topo/topology.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <set>

namespace tpcomm {
namespace topo {
namespace {

struct PathName {
  PathClass path;
  const char* name;
};
const PathName kPathNames[] = {
    {PathClass::kSelf, "self"},
    {PathClass::kNvlink, "nvlink"},
    {PathClass::kPcieSameSwitch, "pcie_switch"},
    {PathClass::kPcieHostBridge, "pcie_host_bridge"},
    {PathClass::kPcieCrossSocket, "pcie_cross_socket"},
    {PathClass::kUnknown, "unknown"},
};

struct HealthName {
  P2pHealth health;
  const char* name;
};
const HealthName kHealthNames[] = {
    {P2pHealth::kUnknown, "unknown"},
    {P2pHealth::kWorks, "works"},
    {P2pHealth::kBroken, "broken"},
    {P2pHealth::kNotTested, "not_tested"},
};

// FNV-1a, 64 bits: tiny, stable across compilers and releases (std::hash is neither).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

const char* pathClassName(PathClass p) {
  for (const PathName& n : kPathNames)
    if (n.path == p) return n.name;
  return "unknown";
}

bool parsePathClass(const std::string& name, PathClass* out) {
  for (const PathName& n : kPathNames)
    if (name == n.name) {
      *out = n.path;
      return true;
    }
  return false;
}

const char* p2pHealthName(P2pHealth h) {
  for (const HealthName& n : kHealthNames)
    if (n.health == h) return n.name;
  return "unknown";
}

bool parseP2pHealth(const std::string& name, P2pHealth* out) {
  for (const HealthName& n : kHealthNames)
    if (name == n.name) {
      *out = n.health;
      return true;
    }
  return false;
}

void Topology::resize(int n) {
  gpus.resize(n);
  links.assign(n, std::vector<LinkInfo>(n));
  for (int i = 0; i < n; ++i) {
    gpus[i].index = i;
    links[i][i] = LinkInfo{0, PathClass::kSelf, true, P2pHealth::kWorks};
  }
}

void Topology::setLink(int a, int b, const LinkInfo& link) {
  links[a][b] = link;
  links[b][a] = link;
}

std::string Topology::key() const {
  std::vector<std::string> uuids;
  for (const GpuInfo& g : gpus) uuids.push_back(g.uuid);
  std::sort(uuids.begin(), uuids.end());
  // Newline-separated so that no concatenation of fields can collide with another.
  std::string text = "tpcomm-topology-key-v1\n" + driver_version + "\n";
  for (const std::string& u : uuids) text += u + "\n";
  char buf[48];
  snprintf(buf, sizeof(buf), "%dgpu-%016" PRIx64, size(), fnv1a(text));
  return buf;
}

bool Topology::validate(std::string* why) const {
  const int n = size();
  auto bad = [why](const std::string& s) {
    *why = s;
    return false;
  };
  if (static_cast<int>(links.size()) != n) return bad("link matrix has the wrong number of rows");
  std::set<std::string> uuids;
  for (int i = 0; i < n; ++i) {
    const GpuInfo& g = gpus[i];
    const std::string at = "gpu " + std::to_string(i);
    if (g.index != i)
      return bad(at + ": index " + std::to_string(g.index) + " is not its position");
    if (g.uuid.empty()) return bad(at + ": empty uuid");
    if (!uuids.insert(g.uuid).second) return bad(at + ": duplicate uuid " + g.uuid);
    if (!g.pci_bus_id.empty() && normalizeBusId(g.pci_bus_id) != g.pci_bus_id)
      return bad(at + ": pci_bus_id '" + g.pci_bus_id + "' is not of the form 0000:18:00.0");
    if (g.numa_node < -1) return bad(at + ": numa_node below -1");
    if (static_cast<int>(links[i].size()) != n) return bad(at + ": link row has the wrong size");
  }
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      const LinkInfo& l = links[a][b];
      const LinkInfo& r = links[b][a];
      const std::string at = "link " + std::to_string(a) + "-" + std::to_string(b);
      if (l.nvlink_count != r.nvlink_count || l.path != r.path ||
          l.p2p_supported != r.p2p_supported || l.p2p_works != r.p2p_works)
        return bad(at + ": not symmetric");
      if ((a == b) != (l.path == PathClass::kSelf))
        return bad(at + (a == b ? ": the diagonal must be 'self'" : ": 'self' between two GPUs"));
      if (l.nvlink_count < 0) return bad(at + ": negative nvlink_count");
      if (l.nvlink_count > 0 && l.path != PathClass::kNvlink)
        return bad(at + ": nvlink_count > 0 but path is " + pathClassName(l.path));
      if (!l.p2p_supported && l.p2p_works == P2pHealth::kWorks)
        return bad(at + ": P2P 'works' although it is not supported");
    }
  }
  return true;
}

std::string normalizeBusId(const std::string& bus_id) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  // Domain may be written with 4 (sysfs, CUDA) or 8 (NVML) hex digits.
  if (sscanf(bus_id.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &tail) != 4) return "";
  if (domain > 0xffff || bus > 0xff || dev > 0x1f || fn > 7) return "";
  // sscanf accepts signs and spaces; insist on hex digits and separators only.
  for (const char c : bus_id)
    if (!isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return "";
  char buf[16];
  snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", domain, bus, dev, fn);
  return buf;
}

}  // namespace topo
}  // namespace tpcomm
