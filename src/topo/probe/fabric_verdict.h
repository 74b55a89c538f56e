// The fabric probe's verdict (topo/probe/fabric_probe.h measures, judgeFabric decides): the one
// fact of the probe the policy decides by. Its own header without dependencies, so that the
// policy's input can carry it and the rank handle can agree on it.
#pragma once

#include <string>

namespace tpcomm {

enum class FabricVerdict {
  kUnknown = 0,        // not probed (NVLink, the probe off, no cached result): push defaults
  kPushFine = 1,       // SM stores hold when every GPU writes at once: the push kernels
  kWriteCollapse = 2,  // all-pairs stores far below one pair's while loads hold: pull, never push
  kNoP2p = 3,          // no working P2P: pinned host memory (the host_* algorithms)
};

const char* fabricVerdictName(FabricVerdict v);  // "unknown", "push_fine", "write_collapse", ...
bool parseFabricVerdict(const std::string& name, FabricVerdict* out);

}  // namespace tpcomm
