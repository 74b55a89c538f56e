#include "comm/rendezvous/bootstrap.h"

#include <string>

#include "comm/rendezvous/bootstrap_sides.h"
#include "comm/rendezvous/unique_id.h"
#include "common/error.h"
#include "common/log.h"

namespace tpcomm {

tpcommResult_t bootstrapAllGather(const tpcommUniqueId& id, int rank, int nranks, const void* mine,
                                  size_t len, void* all, int timeout_ms,
                                  std::unique_ptr<RendezvousHold>* hold) {
  if (hold) hold->reset();
  // The table travels in one frame (a 32-bit length); tpcomm's own handles are a few KiB.
  if (nranks < 1 || rank < 0 || rank >= nranks || len == 0 || len > (size_t{1} << 30) / nranks)
    return fail(tpcommInvalidArgument, "bootstrap: rank %d of %d with %zu-byte blobs: out of range",
                rank, nranks, len);
  if (timeout_ms <= 0)
    return fail(tpcommInvalidArgument, "bootstrap: timeout %d ms: expected > 0", timeout_ms);
  UniqueIdData d{};
  TPCOMM_CHECK(parseUniqueId(id, &d));
  const std::string name = rendezvousName(d);
  TPCOMM_DEBUG(INIT, "bootstrap: rank %d/%d meets at @%s", rank, nranks, name.c_str());
  if (rank == 0) return rootGather(d, name, nranks, mine, len, all, timeout_ms, hold);
  return peerGather(d, name, rank, nranks, mine, len, all, timeout_ms);
}

}  // namespace tpcomm
