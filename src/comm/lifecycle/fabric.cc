#include "comm/lifecycle/fabric.h"

#include <string>

#include "comm/lifecycle/machine_view.h"
#include "common/error.h"
#include "common/log.h"

namespace tpcomm {

void fillIslands(const tpcommComm* c, DeviceComm* d) {
  d->island = -1;
  d->island_size = 0;
  d->island_local = -1;
  d->partner = -1;
  if (c->island_of_rank.empty()) return;
  int size[2] = {0, 0};
  for (int r = 0; r < c->world; ++r) {
    const int i = c->island_of_rank[r];
    if (r == c->rank) d->island_local = size[i];
    d->island_members[i][size[i]++] = static_cast<signed char>(r);
  }
  d->island = c->island_of_rank[c->rank];
  d->island_size = size[0];
  d->partner = d->island_members[1 - d->island][d->island_local];
}

tpcommResult_t detectFabric(tpcommComm* c, const RankInfo* all) {
  std::string reason;
  const Fabric agreed = agreeFabric(all, c->world, &c->ranks_share_gpu, &reason);
  c->grid_caps = agreeGridCaps(all, c->world);
  if (!c->grid_caps.hold)
    return fail(tpcommUnsupported,
                "%d ranks share a GPU with fewer multiprocessors than the grids they may have "
                "resident at once (two a rank under programmatic dependent launch): their kernels "
                "could wait for each other forever; give the ranks more GPUs or fewer ranks",
                c->grid_caps.ranks_per_gpu);
  // Clusters need free multiprocessors of one GPC, which the caps cannot promise (co_residency.h).
  c->clusters = agreeClusters(all, c->world) && !c->grid_caps.any();
  if (c->grid_caps.any())
    TPCOMM_INFO(INIT,
                "rank %d: %d ranks share a GPU: every grid capped at %d blocks so that all of "
                "them are resident at once, and no thread-block clusters",
                c->rank, c->grid_caps.ranks_per_gpu, c->grid_caps.blocks);
  if (!fabricForTransport(c->settings.transport, agreed, &c->fabric))
    return fail(tpcommUnsupported, "TPCOMM_TRANSPORT=p2p, but %s", reason.c_str());
  // Islands: the topology's two-island split where every rank's view shows one (two sockets or
  // switches; ranks sharing GPUs split by GPU), else the halves, ranks 0..m-1 and m..n-1, so that
  // a forced island algorithm has a defined split anywhere. Auto picks island only over PCIe with
  // real islands, and only once kIslandAutoSelect is on (plan/policy.h).
  c->island_of_rank.clear();
  c->islands_found = false;
  if (islandWorld(c->world)) {
    c->islands_found = agreeIslands(all, c->world, &c->island_of_rank);
    if (!c->islands_found) {
      c->island_of_rank.assign(static_cast<size_t>(c->world), 0);
      for (int r = c->world / 2; r < c->world; ++r) c->island_of_rank[r] = 1;
    }
  }
  c->two_islands = autoIsland(c->islands_found, c->fabric);
  c->fabric_verdict = agreeFabricVerdict(all, c->world);
  // A tuning table is used only when every rank loaded the same one: the policy must pick the
  // same algorithm on every rank.
  c->tuned = nullptr;
  if (agreeTuning(all, c->world)) c->tuned = c->tuning.worldFor(c->world, c->fabric);
  TPCOMM_INFO(INIT, "rank %d: fabric %s%s%s%s, fabric probe %s, %s", c->rank, fabricName(c->fabric),
              c->settings.transport == 2 ? " (TPCOMM_TRANSPORT=host)" : "",
              c->ranks_share_gpu ? ", some ranks share a GPU" : "",
              reason.empty() ? "" : (", " + reason).c_str(), fabricVerdictName(c->fabric_verdict),
              c->tuned ? "tuning table in use" : "built-in policy defaults");
  if (!c->island_of_rank.empty()) {
    std::string islands[2];
    for (int r = 0; r < c->world; ++r)
      islands[c->island_of_rank[r]] +=
          (islands[c->island_of_rank[r]].empty() ? "" : ",") + std::to_string(r);
    TPCOMM_INFO(INIT, "rank %d: islands {%s} {%s} (%s)%s", c->rank, islands[0].c_str(),
                islands[1].c_str(),
                c->islands_found ? "from the topology"
                                 : "no two islands in the topology: first and second half of the "
                                   "ranks, used only when island is forced",
                c->two_islands ? ", auto may pick island" : "");
  }
  return tpcommSuccess;
}

}  // namespace tpcomm
