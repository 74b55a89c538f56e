// The fabric probe's results as JSON, for its per-machine cache and `tpcomm doctor --json`:
//   {"tpcomm_fabric_probe": 1, "topology_key": "8gpu-...", "fabric_hash": "...", "gpus": [0, ...],
//    "pairs": [{"a": 0, "b": 1, "store_gbps": 37.0, "load_gbps": 27.1, "copy_gbps": 56.0,
//               "latency_us": 0.41}, ...],
//    "all_pairs": {...the same four...}, "host": {...}, "elapsed_ms": 812.5, "error": ""}
// A number not measured is null. The reader checks every field (a file that decides what tpcomm
// does is never trusted in part).
#pragma once

#include <string>

#include "common/json.h"
#include "topo/probe/fabric_probe.h"
#include "topo/topology.h"

namespace tpcomm {
namespace topo {

constexpr int kFabricProbeFormat = 1;

json::Value fabricProbeToJson(const FabricProbe& p);
bool fabricProbeFromJson(const json::Value& v, FabricProbe* out, std::string* why);

// What the numbers depend on besides the GPUs and driver (Topology::key()): the probed GPUs' PCI
// bus ids, the path and P2P support of every pair among them. 16 hex digits; a GPU moved to
// another slot, a changed switch or P2P setting gives another hash, so the cache is not reused.
std::string probeFabricHash(const Topology& topo, const std::vector<int>& gpus);

}  // namespace topo
}  // namespace tpcomm
