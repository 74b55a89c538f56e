// Setting up the host shared-memory transport for a communicator (transport/host_shm.h): whether
// it is used, decided by every rank from the same agreed facts, and, where it is, rank 0's
// creation of the segment and every rank's attachment to it.
#pragma once

#include "plan/planner.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

struct RankInfo;

// The host transport is used by a multi-rank communicator whose agreed fabric is host memory, or
// that forces a host algorithm or host-memory variant; never by one that runs over P2P (no
// segment is created for it). The planner's rule (needsHostTransport), which `tpcomm doctor`
// previews too.
inline bool hostTransportWanted(Fabric fabric, int world, int algo, int variant = -1) {
  return needsHostTransport(world, fabric, algo, variant);
}

// After detectFabric: where the transport is wanted, rank 0 creates the segment named in its
// handle (all[0].host_shm) and every rank attaches to it (the others wait for rank 0, up to
// kHostSegmentWaitMs or the configured timeout if longer), filling c->dev's host pointers.
tpcommResult_t setupHostTransport(tpcommComm* c, const RankInfo* all);

// How long a rank waits in End for rank 0 to create the segment (or the configured timeout if
// longer): ranks reach End within milliseconds of each other after the handle exchange; this
// leaves a busy rank 0 (opening its peers' IPC handles first) ample room, and a rank 0 that failed
// costs its peers no more than this.
constexpr int kHostSegmentWaitMs = 10000;

}  // namespace tpcomm
