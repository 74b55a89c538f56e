// The facts only NVML knows (NVLink counts, including links through NVSwitch; the driver's own
// PCIe path class; the driver version string), asked for a list of GPUs by PCI bus id. NVML is
// loaded at run time with dlopen("libnvidia-ml.so.1") and declared here by hand (no NVML header
// or library is needed to build): without it discovery falls back to the CUDA runtime and sysfs.
#pragma once

#include <string>
#include <vector>

#include "topo/topology.h"

namespace tpcomm {
namespace topo {

struct NvmlFacts {
  std::string driver_version;                    // "580.65.06"
  std::vector<std::string> uuids;                // per GPU, "" where NVML could not tell
  std::vector<std::vector<int>> nvlinks;         // [a][b] active NVLinks between a and b
  std::vector<std::vector<PathClass>> pci_path;  // [a][b] from the common PCIe ancestor
};

// Asks NVML about the GPUs with these (normalized) bus ids. Returns false with a reason when NVML
// cannot be loaded or initialized, or knows none of the GPUs; per-pair questions that fail leave
// kUnknown / 0 and are logged at DEBUG.
bool queryNvml(const std::vector<std::string>& bus_ids, NvmlFacts* out, std::string* why);

}  // namespace topo
}  // namespace tpcomm
