// From a Topology and the GPU each rank runs on, the facts the policy needs: which Fabric the
// ranks share and whether they split into two islands (two sockets or two PCIe switches) for the
// hierarchical algorithm. Pure functions, tested on the fixtures in tests/cpu/data/topo/.
#pragma once

#include <string>
#include <vector>

#include "topo/fabric.h"
#include "topo/topology.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {
namespace topo {

// Peer memory may be used between the pair: the same GPU, or P2P supported and not seen broken
// (kUnknown / kNotTested count as usable: the P2P test runs at init, see p2p_cache.h).
bool p2pUsable(const LinkInfo& link);

struct Classification {
  Fabric fabric = Fabric::kHost;
  PathClass worst_path = PathClass::kSelf;  // the worst path between two ranks' GPUs
  bool two_islands = false;                 // fabric is kPcie and twoIslands() holds
  std::vector<int> island_of_rank;          // with two_islands: 0 or 1 per rank (rank 0 is in 0)
  std::string reason;                       // one line for the log, Explain and doctor
};

// rank_gpu[r] is the index in topo.gpus of rank r's GPU; several ranks may share a GPU (they
// always reach each other). Fabric:
//   kNvlink  every pair of distinct GPUs has NVLink and usable P2P (also: all ranks on one GPU);
//   kPcie    every pair of distinct GPUs has usable P2P;
//   kHost    otherwise (some pair has no P2P or broken P2P).
// Fails with tpcommInvalidArgument for an empty rank list or a GPU index outside the topology.
tpcommResult_t classify(const Topology& topo, const std::vector<int>& rank_gpu,
                        Classification* out);

// The fabric alone; kHost (the path that works everywhere) when classify() would fail.
Fabric fabricFor(const Topology& topo, const std::vector<int>& rank_gpu);

// Two islands: the ranks split into two groups of equal size (at least 2 ranks each) such that
// every path inside a group is strictly better than every path between the groups, e.g. the 8x
// RTX PRO 6000 box (a PCIe switch per socket: 4 + 4). Looks at paths only, not at P2P health;
// classify() reports islands only for kPcie, the one fabric with an island algorithm.
// island_of_rank (may be null) gets 0 or 1 per rank, rank 0 in island 0.
bool twoIslands(const Topology& topo, const std::vector<int>& rank_gpu,
                std::vector<int>* island_of_rank);

}  // namespace topo
}  // namespace tpcomm
