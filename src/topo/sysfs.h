// What Linux sysfs tells about a GPU without NVML: its NUMA node and where it sits in the PCIe
// tree. /sys/bus/pci/devices/<bus id> is a link into /sys/devices/pci<domain>:<bus>/<bridge>/...
// /<gpu>; the bridges two GPUs have in common say whether traffic between them stays inside PCIe
// switches, goes up to the CPU's host bridge, or crosses to the other socket.
#pragma once

#include <string>

#include "topo/topology.h"

namespace tpcomm {
namespace topo {

// The resolved sysfs folder of a PCI device ("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"),
// "" if it does not exist. sysfs_root is "/sys" except in tests (a fake tree).
std::string pciDevicePath(const std::string& bus_id, const std::string& sysfs_root = "/sys");

// The NUMA node of a PCI device, -1 when unknown (no sysfs, or the kernel reports -1).
int readNumaNode(const std::string& bus_id, const std::string& sysfs_root = "/sys");

// Path class between two GPUs from their resolved sysfs folders (pure string logic):
//   a common bridge below the root complex                -> kPcieSameSwitch
//   the same root complex, no common bridge               -> kPcieHostBridge
//   different root complexes, same or unknown NUMA node   -> kPcieHostBridge
//   different root complexes on different NUMA nodes      -> kPcieCrossSocket
//   a path that is empty or not under a pci root complex  -> kUnknown
PathClass pciPathClass(const std::string& path_a, const std::string& path_b, int numa_a,
                       int numa_b);

}  // namespace topo
}  // namespace tpcomm
