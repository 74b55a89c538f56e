// How this rank reaches its peers: sets comm->fabric, ranks_share_gpu and two_islands from the
// ranks' PCI bus ids and the machine's topology (src/topo), honouring TPCOMM_TRANSPORT.
#pragma once

#include "comm/comm.h"

namespace tpcomm {

tpcommResult_t detectFabric(tpcommComm* c, const RankInfo* all);

}  // namespace tpcomm
