// The fabric probe's verdict as this process sees the machine, for its ranks' handles
// (MachineView::fabric_verdict): read from the probe's cache, or measured once per machine where
// it matters (PCIe with P2P; never on NVLink), as TPCOMM_FABRIC_PROBE allows.
#pragma once

#include "topo/fabric.h"
#include "topo/probe/fabric_probe.h"
#include "topo/probe/fabric_verdict.h"
#include "topo/topology.h"

namespace tpcomm {

// The verdict a communicator uses on `fabric` given the probe's finding (nullptr: no probe):
// none on NVLink (it never collapses), kNoP2p over host memory, the finding's over PCIe. Shared
// with `tpcomm doctor`'s preview so the two cannot disagree.
FabricVerdict policyVerdict(Fabric fabric, const topo::FabricFinding* finding);

// Once per process (later calls return the first answer). kUnknown where the probe does not
// apply (NVLink, fewer than two GPUs), is off, or has no result; kNoP2p without working P2P.
// Concurrent processes (one per GPU) serialise on a lock file next to the cache, so one of them
// probes while the others wait (bounded) and then read its result.
FabricVerdict machineFabricVerdict(const topo::Topology& machine);

}  // namespace tpcomm
