#include "topo/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "common/log.h"

namespace tpcomm {
namespace topo {
namespace {

// ---- the few NVML declarations used (from the NVML API reference; the ABI is stable) ----
typedef int nvmlReturn_t;  // NVML_SUCCESS = 0
typedef struct nvmlDevice_st* nvmlDevice_t;
struct nvmlPciInfo_t {  // the _v2 layout; domain/bus/device sit at the same offsets in v1
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlFeatureEnabled = 1;  // nvmlEnableState_t
constexpr int kNvlinkDeviceGpu = 0;     // nvmlIntNvLinkDeviceType_t
constexpr int kNvlinkDeviceSwitch = 2;
constexpr unsigned kNvmlMaxLinks = 18;      // NVML_NVLINK_MAX_LINKS (Hopper, Blackwell)
constexpr unsigned kUuidBufferSize = 96;    // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned kDriverBufferSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
// nvmlGpuTopologyLevel_t
constexpr int kTopoInternal = 0, kTopoSingle = 10, kTopoMultiple = 20, kTopoHostBridge = 30,
              kTopoNode = 40, kTopoSystem = 50;

struct NvmlApi {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*errorString)(nvmlReturn_t);
  nvmlReturn_t (*driverVersion)(char*, unsigned);
  nvmlReturn_t (*handleByBusId)(const char*, nvmlDevice_t*);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*linkState)(nvmlDevice_t, unsigned, int*);
  nvmlReturn_t (*linkRemotePci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*);
  nvmlReturn_t (*linkRemoteType)(nvmlDevice_t, unsigned, int*);  // optional (newer drivers)
  nvmlReturn_t (*commonAncestor)(nvmlDevice_t, nvmlDevice_t, int*);
};

// Loaded once and never unloaded: NVML keeps driver state that does not like repeated dlclose.
const NvmlApi* loadNvml(std::string* why) {
  static NvmlApi api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      error = std::string("cannot load libnvidia-ml.so.1: ") + (e ? e : "?");
      return;
    }
    bool ok = true;
    auto sym = [&](const char* name, auto* fn, bool required = true) {
      *reinterpret_cast<void**>(fn) = dlsym(lib, name);
      if (!*fn && required) {
        ok = false;
        error = std::string("libnvidia-ml.so.1 has no ") + name + " (driver too old?)";
      }
    };
    sym("nvmlInit_v2", &api.init);
    sym("nvmlShutdown", &api.shutdown);
    sym("nvmlErrorString", &api.errorString);
    sym("nvmlSystemGetDriverVersion", &api.driverVersion);
    sym("nvmlDeviceGetHandleByPciBusId_v2", &api.handleByBusId);
    sym("nvmlDeviceGetUUID", &api.uuid);
    sym("nvmlDeviceGetNvLinkState", &api.linkState);
    sym("nvmlDeviceGetNvLinkRemotePciInfo_v2", &api.linkRemotePci);
    sym("nvmlDeviceGetNvLinkRemoteDeviceType", &api.linkRemoteType, false);
    sym("nvmlDeviceGetTopologyCommonAncestor", &api.commonAncestor);
    if (!ok) api.init = nullptr;
  });
  if (!api.init) *why = error;
  return api.init ? &api : nullptr;
}

PathClass fromNvmlLevel(int level) {
  switch (level) {
    case kTopoInternal:  // two GPUs on one board: an on-board switch
    case kTopoSingle:
    case kTopoMultiple:
      return PathClass::kPcieSameSwitch;
    case kTopoHostBridge:
    case kTopoNode:
      return PathClass::kPcieHostBridge;
    case kTopoSystem:
      return PathClass::kPcieCrossSocket;
    default:
      return PathClass::kUnknown;
  }
}

// NVLinks of one GPU: to each listed GPU, and into NVSwitches (counted apart).
void countLinks(const NvmlApi& api, nvmlDevice_t dev, const std::vector<std::string>& bus_ids,
                std::vector<int>* to_gpu, int* to_switch) {
  for (unsigned l = 0; l < kNvmlMaxLinks; ++l) {
    int active = 0;
    if (api.linkState(dev, l, &active) != kNvmlSuccess || active != kNvmlFeatureEnabled) continue;
    nvmlPciInfo_t pci = {};
    if (api.linkRemotePci(dev, l, &pci) != kNvmlSuccess) continue;
    char id[32];
    snprintf(id, sizeof(id), "%04x:%02x:%02x.0", pci.domain & 0xffff, pci.bus & 0xff,
             pci.device & 0x1f);
    const auto it = std::find(bus_ids.begin(), bus_ids.end(), std::string(id));
    int type = -1;
    if (api.linkRemoteType && api.linkRemoteType(dev, l, &type) != kNvmlSuccess) type = -1;
    // Without a known remote type, a peer that is none of our GPUs is taken for an NVSwitch
    // (older drivers); a known GPU (or IBM NPU) we do not see is skipped.
    const bool type_known = type >= kNvlinkDeviceGpu && type <= kNvlinkDeviceSwitch;
    if (type == kNvlinkDeviceSwitch || (!type_known && it == bus_ids.end())) {
      ++*to_switch;
    } else if (it != bus_ids.end()) {
      ++(*to_gpu)[it - bus_ids.begin()];
    }
  }
}

}  // namespace

bool queryNvml(const std::vector<std::string>& bus_ids, NvmlFacts* out, std::string* why) {
  const NvmlApi* api = loadNvml(why);
  if (!api) return false;
  const nvmlReturn_t rc = api->init();
  if (rc != kNvmlSuccess) {
    *why = std::string("nvmlInit_v2 failed: ") + api->errorString(rc);
    return false;
  }
  const size_t n = bus_ids.size();
  *out = NvmlFacts();
  out->uuids.assign(n, "");
  out->nvlinks.assign(n, std::vector<int>(n, 0));
  out->pci_path.assign(n, std::vector<PathClass>(n, PathClass::kUnknown));
  char buf[kDriverBufferSize] = {};
  if (api->driverVersion(buf, sizeof(buf)) == kNvmlSuccess) out->driver_version = buf;

  std::vector<nvmlDevice_t> dev(n, nullptr);
  size_t found = 0;
  for (size_t i = 0; i < n; ++i) {
    nvmlReturn_t r = api->handleByBusId(bus_ids[i].c_str(), &dev[i]);
    if (r != kNvmlSuccess) r = api->handleByBusId(("0000" + bus_ids[i]).c_str(), &dev[i]);
    if (r != kNvmlSuccess) {
      TPCOMM_DEBUG(TOPO, "NVML has no GPU at %s: %s", bus_ids[i].c_str(), api->errorString(r));
      dev[i] = nullptr;
      continue;
    }
    ++found;
    char uuid[kUuidBufferSize] = {};
    if (api->uuid(dev[i], uuid, sizeof(uuid)) == kNvmlSuccess) out->uuids[i] = uuid;
  }
  std::vector<std::vector<int>> direct(n, std::vector<int>(n, 0));
  std::vector<int> to_switch(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (dev[i]) countLinks(*api, dev[i], bus_ids, &direct[i], &to_switch[i]);
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (a == b || !dev[a] || !dev[b]) continue;
      // Both ends count the same links; a query failing on one side must not hide them.
      int links = std::max(direct[a][b], direct[b][a]);
      if (to_switch[a] > 0 && to_switch[b] > 0) links += std::min(to_switch[a], to_switch[b]);
      out->nvlinks[a][b] = links;
      int level = -1;
      if (api->commonAncestor(dev[a], dev[b], &level) == kNvmlSuccess)
        out->pci_path[a][b] = fromNvmlLevel(level);
    }
  }
  api->shutdown();
  if (found == 0) {
    *why = "NVML knows none of the CUDA devices' PCI bus ids";
    return false;
  }
  return true;
}

}  // namespace topo
}  // namespace tpcomm
