#include "comm/fabric.h"

#include "comm/machine_view.h"
#include "common/error.h"
#include "common/log.h"

namespace tpcomm {

tpcommResult_t detectFabric(tpcommComm* c, const RankInfo* all) {
  std::string reason;
  const Fabric agreed = agreeFabric(all, c->world, &c->ranks_share_gpu, &reason);
  c->fabric = agreed;
  if (c->settings.transport == 2) c->fabric = Fabric::kHost;
  if (c->settings.transport == 1 && agreed == Fabric::kHost)
    return fail(tpcommUnsupported, "TPCOMM_TRANSPORT=p2p, but %s", reason.c_str());
  c->two_islands = false;  // the island algorithm is not built yet (docs/TOPOLOGY.md)
  // A tuning table is used only when every rank loaded the same one: the policy must pick the
  // same algorithm on every rank.
  c->tuned = nullptr;
  if (agreeTuning(all, c->world)) c->tuned = c->tuning.tableFor(c->world, c->fabric);
  TPCOMM_INFO(INIT, "rank %d: fabric %s%s%s%s, %s", c->rank, fabricName(c->fabric),
              c->settings.transport == 2 ? " (TPCOMM_TRANSPORT=host)" : "",
              c->ranks_share_gpu ? ", some ranks share a GPU" : "",
              reason.empty() ? "" : (", " + reason).c_str(),
              c->tuned ? "tuning table in use" : "built-in policy defaults");
  return tpcommSuccess;
}

}  // namespace tpcomm
