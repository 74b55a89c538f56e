#include "topo/discover.h"

#include <cuda_runtime_api.h>

#include <cctype>
#include <cstdio>

#include "common/error.h"
#include "common/log.h"
#include "topo/cache_dir.h"
#include "topo/nvml.h"
#include "topo/sysfs.h"

namespace tpcomm {
namespace topo {
namespace {

tpcommResult_t readGpus(Topology* topo) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess)
    return failCuda(err, "topology discovery: cudaGetDeviceCount", __FILE__, __LINE__);
  if (count <= 0)
    return fail(tpcommNoDevice,
                "topology discovery: no CUDA device is visible "
                "(check CUDA_VISIBLE_DEVICES)");
  topo->resize(count);
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p;
    TPCOMM_CUDA_CHECK(cudaGetDeviceProperties(&p, i));
    GpuInfo& g = topo->gpus[i];
    g.name = p.name;
    g.uuid = formatGpuUuid(reinterpret_cast<const unsigned char*>(p.uuid.bytes));
    g.cc_major = p.major;
    g.cc_minor = p.minor;
    char bus[32];
    snprintf(bus, sizeof(bus), "%04x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
    g.pci_bus_id = normalizeBusId(bus);
    g.numa_node = readNumaNode(g.pci_bus_id);
  }
  return tpcommSuccess;
}

std::string driverVersion(const NvmlFacts* nvml) {
  if (nvml && !nvml->driver_version.empty()) return nvml->driver_version;
  std::string text, why;
  if (readTextFile("/proc/driver/nvidia/version", &text, &why, 4096)) {
    const std::string v = driverVersionFromProc(text);
    if (!v.empty()) return v;
  }
  int cuda_driver = 0;
  cudaDriverGetVersion(&cuda_driver);
  return "cuda-driver-" + std::to_string(cuda_driver);
}

LinkInfo readLink(const Topology& topo, int a, int b, const NvmlFacts* nvml, bool* used_sysfs) {
  LinkInfo l;
  int ab = 0, ba = 0, atomics = 0, rank = 0;
  if (cudaDeviceCanAccessPeer(&ab, a, b) != cudaSuccess) ab = 0;
  if (cudaDeviceCanAccessPeer(&ba, b, a) != cudaSuccess) ba = 0;
  if (cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, a, b) != cudaSuccess)
    atomics = 0;
  if (cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, a, b) != cudaSuccess)
    rank = -1;
  cudaGetLastError();  // a failed attribute query must not linger as the sticky last error
  l.p2p_supported = ab && ba;
  l.p2p_works = l.p2p_supported ? P2pHealth::kUnknown : P2pHealth::kNotTested;
  if (nvml && nvml->nvlinks[a][b] > 0) {
    l.path = PathClass::kNvlink;
    l.nvlink_count = nvml->nvlinks[a][b];
  } else if (nvml && nvml->pci_path[a][b] != PathClass::kUnknown) {
    l.path = nvml->pci_path[a][b];
  } else if (!nvml && l.p2p_supported && atomics) {
    // No NVML: native peer atomics are what NVLink offers and PCIe peer access does not.
    l.path = PathClass::kNvlink;
  } else {
    const GpuInfo& ga = topo.gpus[a];
    const GpuInfo& gb = topo.gpus[b];
    l.path = pciPathClass(pciDevicePath(ga.pci_bus_id), pciDevicePath(gb.pci_bus_id), ga.numa_node,
                          gb.numa_node);
    *used_sysfs = true;
  }
  TPCOMM_DEBUG(TOPO,
               "GPU %d - GPU %d: %s, nvlinks %d, P2P %s (%d/%d), native atomics %d, "
               "performance rank %d",
               a, b, pathClassName(l.path), l.nvlink_count,
               l.p2p_supported ? "supported" : "not supported", ab, ba, atomics, rank);
  return l;
}

}  // namespace

tpcommResult_t discover(Topology* out) {
  *out = Topology();
  Topology topo;
  TPCOMM_CHECK(readGpus(&topo));
  std::vector<std::string> bus_ids;
  for (const GpuInfo& g : topo.gpus) bus_ids.push_back(g.pci_bus_id);
  NvmlFacts facts;
  std::string why;
  const bool have_nvml = queryNvml(bus_ids, &facts, &why);
  if (!have_nvml)
    TPCOMM_INFO(TOPO, "NVML not used (%s): NVLink counts unknown, PCIe paths from sysfs",
                why.c_str());
  const NvmlFacts* nvml = have_nvml ? &facts : nullptr;
  topo.driver_version = driverVersion(nvml);
  bool used_sysfs = false;
  for (int a = 0; a < topo.size(); ++a)
    for (int b = a + 1; b < topo.size(); ++b)
      topo.setLink(a, b, readLink(topo, a, b, nvml, &used_sysfs));
  for (const GpuInfo& g : topo.gpus) used_sysfs = used_sysfs || g.numa_node >= 0;
  topo.sources = std::string("cuda") + (have_nvml ? ",nvml" : "") + (used_sysfs ? ",sysfs" : "");
  if (!topo.validate(&why))
    return fail(tpcommInternalError, "topology discovery produced an invalid topology: %s",
                why.c_str());
  TPCOMM_INFO(TOPO, "%d GPUs, driver %s, key %s (from %s)", topo.size(),
              topo.driver_version.c_str(), topo.key().c_str(), topo.sources.c_str());
  *out = std::move(topo);
  return tpcommSuccess;
}

std::string driverVersionFromProc(const std::string& text) {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ..." (or "Open Kernel
  // Module for x86_64  580.65.06  Release Build ..."): the first token of digits and dots.
  const size_t start = text.find("NVRM version:");
  if (start == std::string::npos) return "";
  const size_t eol = text.find('\n', start);
  const std::string line = text.substr(start, eol == std::string::npos ? eol : eol - start);
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t j = i;
    while (j < line.size() && !isspace(static_cast<unsigned char>(line[j]))) ++j;
    const std::string tok = line.substr(i, j - i);
    bool numeric = !tok.empty() && isdigit(static_cast<unsigned char>(tok[0])) &&
                   tok.find('.') != std::string::npos;
    for (const char c : tok)
      numeric = numeric && (isdigit(static_cast<unsigned char>(c)) || c == '.');
    if (numeric) return tok;
    i = j;
  }
  return "";
}

std::string formatGpuUuid(const unsigned char b[16]) {
  char buf[48];
  snprintf(buf, sizeof(buf),
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
           b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
           b[15]);
  return buf;
}

}  // namespace topo
}  // namespace tpcomm
