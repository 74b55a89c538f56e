#include "comm/lifecycle/machine_view.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "comm/lifecycle/probe_view.h"
#include "comm/lifecycle/rank_info.h"
#include "common/log.h"
#include "topo/classify.h"
#include "topo/discover.h"
#include "topo/p2p_cache.h"
#include "topo/topology.h"

namespace tpcomm {
namespace {

uint64_t fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h ? h : 1;
}

// Discovered once per process (NVML start-up costs ~0.4 s), with P2P health from the machine's
// cache only: the data-integrity tests themselves run in `tpcomm doctor`, not at every start.
const topo::Topology* machineTopology() {
  static std::once_flag once;
  static topo::Topology topo;
  static bool ok = false;
  std::call_once(once, [] {
    if (topo::discover(&topo) != tpcommSuccess) {
      TPCOMM_INFO(TOPO, "no topology (%s): deciding from CUDA attributes alone", "discover failed");
      return;
    }
    std::vector<int> all;
    for (int i = 0; i < topo.size(); ++i) all.push_back(i);
    topo::P2pCheckOptions opt;
    opt.tester = [](int, int, int, std::string* why) {
      *why = "not tested at start-up (run `tpcomm doctor` to test and cache)";
      return topo::P2pHealth::kUnknown;
    };
    topo::checkP2pHealth(&topo, all, opt);
    ok = true;
  });
  return ok ? &topo : nullptr;
}

const MachineView::Gpu* find(const MachineView& v, const char* bus) {
  for (uint32_t i = 0; i < v.count && i < kMaxRanks; ++i)
    if (strncmp(v.gpus[i].bus, bus, sizeof(v.gpus[i].bus)) == 0) return &v.gpus[i];
  return nullptr;
}

// The ranks' distinct GPUs (by bus id), and each rank's index among them.
void distinctGpus(const RankInfo* all, int world, std::vector<std::string>* buses,
                  std::vector<int>* rank_gpu) {
  rank_gpu->assign(static_cast<size_t>(world), 0);
  for (int r = 0; r < world; ++r) {
    const std::string bus = all[r].pci_bus_id_norm;
    size_t i = 0;
    while (i < buses->size() && (*buses)[i] != bus) ++i;
    if (i == buses->size()) buses->push_back(bus);
    (*rank_gpu)[r] = static_cast<int>(i);
  }
}

}  // namespace

void buildMachineView(int device, MachineView* v, TuningTable* table, std::string* key) {
  memset(v, 0, sizeof(*v));
  *table = TuningTable{};
  key->clear();
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
  cudaGetLastError();
  const topo::Topology* t = machineTopology();
  for (int d = 0; d < n && v->count < kMaxRanks; ++d) {
    MachineView::Gpu& g = v->gpus[v->count];
    char bus[32] = "";
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), d) != cudaSuccess) continue;
    snprintf(g.bus, sizeof(g.bus), "%s", topo::normalizeBusId(bus).c_str());
    int access = d == device ? 1 : 0, atomics = 0;
    if (d != device) {
      cudaDeviceCanAccessPeer(&access, device, d);
      if (access)
        cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, device, d);
    }
    g.access = static_cast<uint8_t>(access != 0);
    g.nvlink = static_cast<uint8_t>(d != device && access && atomics);
    g.path = static_cast<uint8_t>(d == device ? topo::PathClass::kSelf : topo::PathClass::kUnknown);
    if (t && device < t->size() && d < t->size() && d != device) {
      const topo::LinkInfo& l = t->links[device][d];
      g.nvlink = static_cast<uint8_t>(l.path == topo::PathClass::kNvlink);
      g.broken = static_cast<uint8_t>(l.p2p_works == topo::P2pHealth::kBroken);
      g.path = static_cast<uint8_t>(l.path);
    }
    ++v->count;
  }
  cudaGetLastError();
  if (!t) return;
  v->fabric_verdict = static_cast<uint8_t>(machineFabricVerdict(*t));
  *key = t->key();
  std::string why;
  const std::string path = defaultTuningPath(*key);
  if (path.empty()) return;
  if (loadTuningTable(path, *key, table, &why) == TuningLoad::kLoaded) {
    v->tuning_hash = fnv(tuningTableText(*table));
    TPCOMM_INFO(TUNING, "tuning table %s loaded", path.c_str());
  }
}

Fabric agreeFabric(const RankInfo* all, int world, bool* share, std::string* reason) {
  std::vector<std::string> buses;
  std::vector<int> rank_gpu;
  distinctGpus(all, world, &buses, &rank_gpu);
  *share = static_cast<int>(buses.size()) < world;
  // The pairs as every rank on either GPU sees them, classified like any topology
  // (topo::classify, which `tpcomm doctor` uses too): NVLink only if every view says so, P2P only
  // if no view lacks it or found it broken. A GPU a rank cannot see (CUDA_VISIBLE_DEVICES) is no
  // NVLink but may still be mapped over IPC.
  topo::Topology t;
  t.resize(static_cast<int>(buses.size()));
  for (int a = 0; a < t.size(); ++a) {
    for (int b = a + 1; b < t.size(); ++b) {
      bool nvlink = true, access = true, broken = false;
      for (int r = 0; r < world; ++r) {
        if (rank_gpu[r] != a && rank_gpu[r] != b) continue;
        const MachineView::Gpu* g = find(all[r].view, buses[rank_gpu[r] == a ? b : a].c_str());
        nvlink = nvlink && g && g->nvlink;
        access = access && (!g || g->access);
        broken = broken || (g && g->broken);
      }
      topo::LinkInfo l;
      l.path = nvlink ? topo::PathClass::kNvlink : topo::PathClass::kUnknown;
      l.p2p_supported = access;
      l.p2p_works = broken ? topo::P2pHealth::kBroken : topo::P2pHealth::kUnknown;
      t.setLink(a, b, l);
    }
  }
  topo::Classification c;
  if (topo::classify(t, rank_gpu, &c) != tpcommSuccess) return Fabric::kHost;
  *reason = c.reason;
  return c.fabric;
}

bool agreeIslands(const RankInfo* all, int world, std::vector<int>* island_of_rank) {
  island_of_rank->clear();
  std::vector<std::string> buses;
  std::vector<int> rank_gpu;
  distinctGpus(all, world, &buses, &rank_gpu);
  topo::Topology t;
  t.resize(static_cast<int>(buses.size()));
  auto pathFrom = [&](int gpu, const std::string& to) {
    int worst = -1;  // over the ranks on `gpu`: the worst path any of them sees to `to`
    for (int r = 0; r < world; ++r) {
      if (rank_gpu[r] != gpu) continue;
      const MachineView::Gpu* g = find(all[r].view, to.c_str());
      worst = std::max(worst,
                       g ? static_cast<int>(g->path) : static_cast<int>(topo::PathClass::kUnknown));
    }
    return worst;
  };
  for (int a = 0; a < t.size(); ++a) {
    for (int b = a + 1; b < t.size(); ++b) {
      const int p = std::max(pathFrom(a, buses[b]), pathFrom(b, buses[a]));
      topo::LinkInfo l;
      l.path = p < 0 || p > static_cast<int>(topo::PathClass::kUnknown)
                   ? topo::PathClass::kUnknown
                   : static_cast<topo::PathClass>(p);
      t.setLink(a, b, l);
    }
  }
  return topo::twoIslands(t, rank_gpu, island_of_rank);
}

GridCaps agreeGridCaps(const RankInfo* all, int world) {
  std::vector<std::string> buses;
  std::vector<int> rank_gpu;
  distinctGpus(all, world, &buses, &rank_gpu);
  std::vector<GpuShare> gpus(buses.size());
  for (int r = 0; r < world; ++r) {
    GpuShare& g = gpus[static_cast<size_t>(rank_gpu[r])];
    const GpuOccupancy& o = all[r].view.occupancy;
    g.sms = g.ranks++ == 0 ? o.sms : std::min<int>(g.sms, o.sms);
    g.pdl = g.pdl || o.pdl != 0;
  }
  return gridCapsOf(gpus);
}

bool agreeClusters(const RankInfo* all, int world) {
  for (int r = 0; r < world; ++r)
    if (!all[r].view.occupancy.clusters) return false;
  return world > 0;
}

FabricVerdict agreeFabricVerdict(const RankInfo* all, int world) {
  bool same = true;
  for (int r = 0; r < world; ++r) {
    const auto v = static_cast<FabricVerdict>(all[r].view.fabric_verdict);
    if (v == FabricVerdict::kWriteCollapse) return v;
    same = same && all[r].view.fabric_verdict == all[0].view.fabric_verdict;
  }
  return same ? static_cast<FabricVerdict>(all[0].view.fabric_verdict) : FabricVerdict::kUnknown;
}

bool agreeTuning(const RankInfo* all, int world) {
  for (int r = 0; r < world; ++r)
    if (all[r].view.tuning_hash == 0 || all[r].view.tuning_hash != all[0].view.tuning_hash)
      return false;
  return true;
}

}  // namespace tpcomm
