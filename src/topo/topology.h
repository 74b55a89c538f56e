// The machine as tpcomm sees it: GPUs and, for every pair, how they are connected and whether
// peer-to-peer access works. Pure data with no CUDA in it, so that the policy's inputs can be
// built from JSON fixtures and tested on a machine without GPU. discover.h fills it from the live
// machine; topology_json.h reads and writes it; classify.h turns it into a Fabric for the policy.
#pragma once

#include <string>
#include <vector>

namespace tpcomm {
namespace topo {

// How two GPUs reach each other, best first: the order is used to compare paths.
enum class PathClass {
  kSelf = 0,             // the same GPU
  kNvlink = 1,           // NVLink, direct or through NVSwitch
  kPcieSameSwitch = 2,   // PCIe through switches only (nvidia-smi PIX / PXB)
  kPcieHostBridge = 3,   // PCIe through a CPU host bridge, one socket (PHB / NODE)
  kPcieCrossSocket = 4,  // PCIe across the CPU interconnect between sockets (SYS)
  kUnknown = 5,          // nothing could tell; ranked worst
};

// Whether peer access was seen to move data correctly (p2p_test.h). Support reported by the driver
// is not enough: IOMMU / ACS setups are known to accept peer access and then hang or corrupt.
enum class P2pHealth {
  kUnknown = 0,    // not tested yet (or the test itself could not run)
  kWorks = 1,      // the bounded data-integrity test passed
  kBroken = 2,     // the test timed out or read back wrong data
  kNotTested = 3,  // P2P is not supported, so there was nothing to test
};

const char* pathClassName(PathClass p);  // "self", "nvlink", "pcie_switch", ...
bool parsePathClass(const std::string& name, PathClass* out);
const char* p2pHealthName(P2pHealth h);  // "unknown", "works", "broken", "not_tested"
bool parseP2pHealth(const std::string& name, P2pHealth* out);

struct GpuInfo {
  int index = 0;           // CUDA ordinal (as seen by this process)
  std::string name;        // "NVIDIA H200"
  std::string uuid;        // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it
  std::string pci_bus_id;  // normalized "0000:18:00.0" (see normalizeBusId)
  int numa_node = -1;      // -1: unknown
  int cc_major = 0;
  int cc_minor = 0;
};

struct LinkInfo {
  // Number of NVLinks between the pair (through NVSwitch: the links each GPU has into the switch
  // fabric, like nvidia-smi's NV18). 0 with path kNvlink means "NVLink, count unknown" (NVML
  // was not available).
  int nvlink_count = 0;
  PathClass path = PathClass::kUnknown;
  bool p2p_supported = false;  // the driver allows peer access in both directions
  P2pHealth p2p_works = P2pHealth::kUnknown;
};

struct Topology {
  std::string driver_version;  // "580.65.06"
  std::string sources;         // where the facts came from: "nvml,cuda,sysfs", "fixture", ...
  std::vector<GpuInfo> gpus;
  std::vector<std::vector<LinkInfo>> links;  // [a][b], symmetric, the diagonal is kSelf

  int size() const { return static_cast<int>(gpus.size()); }
  // Sets n GPUs and an n x n link matrix: the diagonal kSelf, every other pair unknown.
  void resize(int n);
  // Sets both directions of a pair (the model is symmetric: discovery keeps what holds both ways).
  void setLink(int a, int b, const LinkInfo& link);
  const LinkInfo& link(int a, int b) const { return links[a][b]; }

  // A stable name for this set of GPUs and driver, for cache and tuning-table file names:
  // "<n>gpu-<16 hex digits>", a 64-bit FNV-1a hash of the driver version and the sorted UUIDs.
  // Independent of CUDA ordinals (CUDA_VISIBLE_DEVICES=1,0 gives the same key as 0,1); a driver
  // update or a different GPU set gives a new key, so old P2P results and tunings are not reused.
  std::string key() const;

  // Checks the invariants every consumer relies on (sizes, symmetry, diagonal, unique UUIDs,
  // consistent fields); on failure returns false and says which.
  bool validate(std::string* why) const;
};

// "0000:18:00.0" from any of "00000000:18:00.0" (NVML), "0000:18:00.0" (sysfs, CUDA) or upper
// case; "" if the text is not a PCI bus id.
std::string normalizeBusId(const std::string& bus_id);

}  // namespace topo
}  // namespace tpcomm
