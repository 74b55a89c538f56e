// A Topology as JSON: what `tpcomm doctor` dumps, what the fixtures in tests/cpu/data/topo/ hold,
// and what a user attaches to a bug report. The format is in docs/TOPOLOGY.md:
//   {"tpcomm_topology": 1, "driver_version": "...", "sources": "...",
//    "gpus": [{"index": 0, "name": "...", "uuid": "GPU-...", "pci_bus_id": "0000:18:00.0",
//              "numa_node": 0, "cc_major": 9, "cc_minor": 0}, ...],
//    "links": [{"gpus": [0, 1], "path": "nvlink", "nvlink_count": 18, "p2p_supported": true,
//               "p2p_works": "works"}, ...]}          (every pair of distinct GPUs exactly once)
#pragma once

#include <string>

#include "common/json.h"
#include "topo/topology.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {
namespace topo {

constexpr int kTopologyFormatVersion = 1;

json::Value topologyToJson(const Topology& topo);
std::string topologyToText(const Topology& topo);

// Strict: unknown members, missing pairs, duplicate pairs or an invalid topology are errors.
// On failure returns false and sets *why to a message naming the field.
bool topologyFromJson(const json::Value& v, Topology* out, std::string* why);
bool parseTopology(const std::string& text, Topology* out, std::string* why);

// Reads a file (tpcommSystemError if unreadable, tpcommInvalidArgument if not a valid topology;
// the message names the path).
tpcommResult_t loadTopologyFile(const std::string& path, Topology* out);

}  // namespace topo
}  // namespace tpcomm
