#include "comm/lifecycle/host_transport.h"

#include <algorithm>
#include <string>

#include "comm/comm.h"
#include "common/error.h"
#include "common/log.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {

tpcommResult_t setupHostTransport(tpcommComm* c, const RankInfo* all) {
  const std::string name = all[0].host_shm;
  if (name.empty() ||
      !hostTransportWanted(c->fabric, c->world, c->settings.algo, c->settings.knobs.variant))
    return tpcommSuccess;
  const size_t slot = c->settings.host_slot_bytes;
  if (c->rank == 0) TPCOMM_CHECK(hostSegmentCreate(name, c->world, slot, &c->host_seg));
  TPCOMM_CHECK(hostSegmentAttach(
      name, c->world, slot, std::max(c->settings.timeout_ms, kHostSegmentWaitMs), &c->host_seg));
  for (int p = 0; p < c->world; ++p) c->dev.hbufs[p] = hostInbox(c->host_seg, p, slot);
  c->dev.host_slot_bytes = slot;
  c->dev.hout = hostOutbox(c->host_seg, c->world, 0, slot);
  c->dev.out_stride = bulkOutboxBytes(slot);
  c->dev.out_slot_bytes = bulkSlotBytes(slot);
  for (int p = 0; p < c->world; ++p)
    c->dev.hsbufs[p] = hostSentinelInbox(c->host_seg, c->world, p, slot);
  c->dev.hs_slot_bytes = kHostSentinelSlotBytes;
  for (int p = 0; p < c->world; ++p) c->dev.hprints[p] = hostPrints(c->host_seg, c->world, p, slot);
  TPCOMM_INFO(SHM, "rank %d: host-memory transport, %zu bytes per inbox slot", c->rank, slot);
  return tpcommSuccess;
}

}  // namespace tpcomm
