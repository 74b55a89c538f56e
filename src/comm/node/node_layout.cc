#include "comm/node/node_layout.h"

#include <cstring>
#include <string>

#include "common/error.h"
#include "kernels/layout/device_comm.h"

namespace tpcomm {

tpcommResult_t groupByHost(const RankInfo* all, int nranks, int me, NodeLayout* out) {
  NodeLayout l;
  std::vector<int> first_rank;  // per node: its lowest global rank
  std::vector<int> count;
  l.node_of.assign(static_cast<size_t>(nranks), 0);
  l.local_of.assign(static_cast<size_t>(nranks), 0);
  for (int r = 0; r < nranks; ++r) {
    int n = 0;
    while (n < static_cast<int>(first_rank.size()) &&
           strcmp(all[first_rank[n]].host_id, all[r].host_id) != 0)
      ++n;
    if (n == static_cast<int>(first_rank.size())) {
      first_rank.push_back(r);
      count.push_back(0);
    }
    const RankInfo& f = all[first_rank[n]];
    if (strcmp(f.boot_id, all[r].boot_id) != 0)
      return fail(tpcommInvalidArgument,
                  "ranks %d and %d give one host id (%s) but different boot ids (%s vs %s): "
                  "they run on two machines; TPCOMM_HOST_ID must differ between machines",
                  first_rank[n], r, all[r].host_id, f.boot_id, all[r].boot_id);
    l.node_of[r] = n;
    l.local_of[r] = count[n]++;
  }
  l.nodes = static_cast<int>(first_rank.size());
  l.local_ranks = count[0];
  for (int n = 1; n < l.nodes; ++n)
    if (count[n] != l.local_ranks)
      return fail(tpcommInvalidArgument,
                  "every machine must hold the same number of ranks: the machine of rank %d "
                  "(host id %s) holds %d, the machine of rank %d (host id %s) holds %d",
                  first_rank[0], all[first_rank[0]].host_id, count[0], first_rank[n],
                  all[first_rank[n]].host_id, count[n]);
  if (l.local_ranks > kMaxRanks)
    return fail(tpcommInvalidArgument,
                "%d ranks on the machine of rank %d (host id %s): tpcomm supports 1..%d ranks "
                "per machine",
                l.local_ranks, first_rank[0], all[first_rank[0]].host_id, kMaxRanks);
  l.node = l.node_of[me];
  l.local = l.local_of[me];
  l.leaders.assign(static_cast<size_t>(l.local_ranks), -1);
  for (int r = 0; r < nranks; ++r) {
    if (l.node_of[r] == l.node) l.members.push_back(r);
    if (l.node_of[r] == 0) l.leaders[l.local_of[r]] = r;
    if (l.node_of[r] != r / l.local_ranks || l.local_of[r] != r % l.local_ranks)
      l.contiguous = false;
  }
  *out = std::move(l);
  return tpcommSuccess;
}

std::vector<RankInfo> localHandles(const RankInfo* all, const NodeLayout& layout) {
  std::vector<RankInfo> local;
  local.reserve(layout.members.size());
  for (size_t i = 0; i < layout.members.size(); ++i) {
    RankInfo h = all[layout.members[i]];
    h.rank = static_cast<int32_t>(i);
    h.nranks = layout.local_ranks;
    // Only the local group's first rank offers an NCCL id for the local fallback, and a spanning
    // communicator has none (comm/node/node_link.h): the id, if any, serves the link of index 0.
    h.nccl_wanted = 0;
    local.push_back(h);
  }
  return local;
}

}  // namespace tpcomm
