// The fabric probe's verdict as this process sees the machine, for its ranks' handles
// (MachineView::fabric_verdict): read from the probe's cache, or measured once per machine where
// it matters (PCIe with P2P; never on NVLink), as TPCOMM_FABRIC_PROBE allows.
#pragma once

#include "topo/fabric_verdict.h"
#include "topo/topology.h"

namespace tpcomm {

// Once per process (later calls return the first answer). kUnknown where the probe does not
// apply (NVLink, fewer than two GPUs), is off, or has no result; kNoP2p without working P2P.
// Concurrent processes (one per GPU) serialise on a lock file next to the cache, so one of them
// probes while the others wait (bounded) and then read its result.
FabricVerdict machineFabricVerdict(const topo::Topology& machine);

}  // namespace tpcomm
