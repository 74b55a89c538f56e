#include "topo/sysfs.h"

#include <climits>
#include <cstdlib>
#include <vector>

#include "topo/cache_dir.h"

namespace tpcomm {
namespace topo {
namespace {

// The components from the root complex ("pci0000:00") down, "" components dropped; empty if the
// path has no root complex (a virtual device, or not a sysfs path at all).
std::vector<std::string> fromRootComplex(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  for (size_t i = 0; i < parts.size(); ++i)
    if (parts[i].compare(0, 3, "pci") == 0 && parts[i].find(':') != std::string::npos)
      return std::vector<std::string>(parts.begin() + i, parts.end());
  return {};
}

}  // namespace

std::string pciDevicePath(const std::string& bus_id, const std::string& sysfs_root) {
  const std::string link = sysfs_root + "/bus/pci/devices/" + normalizeBusId(bus_id);
  char resolved[PATH_MAX];
  if (normalizeBusId(bus_id).empty() || !realpath(link.c_str(), resolved)) return "";
  return resolved;
}

int readNumaNode(const std::string& bus_id, const std::string& sysfs_root) {
  const std::string id = normalizeBusId(bus_id);
  std::string text, why;
  if (id.empty() ||
      !readTextFile(sysfs_root + "/bus/pci/devices/" + id + "/numa_node", &text, &why, 64))
    return -1;
  char* end = nullptr;
  const long v = strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || v < -1 || v > 65535) return -1;
  return static_cast<int>(v);
}

PathClass pciPathClass(const std::string& path_a, const std::string& path_b, int numa_a,
                       int numa_b) {
  const std::vector<std::string> a = fromRootComplex(path_a);
  const std::vector<std::string> b = fromRootComplex(path_b);
  if (a.size() < 2 || b.size() < 2) return PathClass::kUnknown;  // root complex + the device
  if (a == b) return PathClass::kSelf;
  if (a[0] != b[0]) {
    const bool other_socket = numa_a >= 0 && numa_b >= 0 && numa_a != numa_b;
    return other_socket ? PathClass::kPcieCrossSocket : PathClass::kPcieHostBridge;
  }
  // Bridges in common below the root complex (the devices themselves excluded).
  size_t common = 0;
  while (common + 1 < a.size() && common + 1 < b.size() && a[common + 1] == b[common + 1]) ++common;
  return common > 0 ? PathClass::kPcieSameSwitch : PathClass::kPcieHostBridge;
}

}  // namespace topo
}  // namespace tpcomm
