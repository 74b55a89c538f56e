// How this rank reaches its peers: sets comm->fabric, ranks_share_gpu, the grid caps of ranks
// sharing a GPU, the islands and two_islands from the ranks' PCI bus ids, occupancy and the
// machine's topology (src/topo), honouring TPCOMM_TRANSPORT.
#pragma once

#include "comm/comm.h"

namespace tpcomm {

tpcommResult_t detectFabric(tpcommComm* c, const RankInfo* all);

// The island map in the kernels' form (c->island_of_rank): members in rank order, this rank's
// island, local index and partner; island -1 without a split.
void fillIslands(const tpcommComm* c, DeviceComm* d);

}  // namespace tpcomm
