// Rendezvous of the ranks of one machine: an all-gather of fixed-size blobs through a Unix-domain
// socket in the abstract namespace, named by the unique id. Rank 0 listens, the others connect
// (retrying until rank 0 is up), every peer's uid is checked with SO_PEERCRED, and every wait has
// a deadline, so a missing rank is a tpcommTimeout naming it, never a hang. No TCP listener.
#pragma once

#include <cstddef>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

// all receives nranks * len bytes, rank i's blob at offset i * len.
tpcommResult_t bootstrapAllGather(const tpcommUniqueId& id, int rank, int nranks, const void* mine,
                                  size_t len, void* all, int timeout_ms);

}  // namespace tpcomm
