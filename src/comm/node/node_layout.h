// Which machine (node) each rank of a communicator is on, from the host ids in the rank handles
// (comm/lifecycle/host_id.h): the ranks of one machine form its local tpcomm group, ordered by
// global rank; one NCCL communicator per local index links the machines (comm/node/node_link.h).
// Pure C++: the CPU tests feed it synthetic handle tables.
#pragma once

#include <vector>

#include "comm/lifecycle/rank_info.h"

namespace tpcomm {

struct NodeLayout {
  int nodes = 1;              // machines, numbered by their lowest global rank (node 0: rank 0's)
  int local_ranks = 0;        // ranks on every machine (L)
  int node = 0;               // this rank's machine
  int local = 0;              // this rank's local index: its order among its machine's global ranks
  std::vector<int> node_of;   // per global rank
  std::vector<int> local_of;  // per global rank
  std::vector<int> members;   // this machine's global ranks, by local index
  std::vector<int> leaders;   // per local index: the global rank holding it on node 0, which
                              // makes that index's NCCL unique id
  // Every machine's ranks are consecutive global ranks (node n holds n*L .. n*L+L-1), as
  // torchrun and SLURM number them; reduce-scatter and all-gather across machines need it.
  bool contiguous = true;
};

// Groups nranks unpacked handles (unpackHandles checked them) by host id, for rank `me`. Every
// machine must hold the same number of ranks, 1..8 (tpcommInvalidArgument naming the counts);
// ranks that claim one machine must share its boot id (tpcommInvalidArgument naming both).
tpcommResult_t groupByHost(const RankInfo* all, int nranks, int me, NodeLayout* out);

// The local group's handles: the members' handles with rank and nranks rewritten to the local
// index and L, so the single-machine init (fabric, host transport, planner) runs on them as is.
std::vector<RankInfo> localHandles(const RankInfo* all, const NodeLayout& layout);

}  // namespace tpcomm
