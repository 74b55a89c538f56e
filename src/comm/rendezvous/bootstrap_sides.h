// The two sides of the rendezvous (bootstrap.h): rank 0's poll loop and a peer's handshake.
#pragma once

#include <memory>
#include <string>

#include "comm/rendezvous/bootstrap.h"
#include "comm/rendezvous/bootstrap_wire.h"
#include "comm/rendezvous/unique_id.h"

namespace tpcomm {

tpcommResult_t rootGather(const UniqueIdData& id, const std::string& name, int nranks,
                          const void* mine, size_t len, void* all, int timeout_ms,
                          std::unique_ptr<RendezvousHold>* hold);
tpcommResult_t peerGather(const UniqueIdData& id, const std::string& name, int rank, int nranks,
                          const void* mine, size_t len, void* all, int timeout_ms);

}  // namespace tpcomm
