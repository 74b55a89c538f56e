// Live communicators. A handle that is not registered (never created, or destroyed) is refused
// with tpcommInvalidUsage instead of being dereferenced. A communicator is never placed at an
// address an earlier, destroyed one had, so a stale handle can never name a newer communicator.
#pragma once

#include "comm/comm.h"

namespace tpcomm {

// A new, registered communicator at an address no destroyed communicator ever had.
tpcommComm* createComm();
// Unregisters c, remembers its address as destroyed, and frees it.
void retireComm(tpcommComm* c);

// For objects the caller owns (tests): registered without the allocation.
void registerComm(tpcommComm* c);
void unregisterComm(tpcommComm* c);
// tpcommSuccess if c is a live communicator (and, with need_ready, past init), else a clear error.
tpcommResult_t checkComm(const tpcommComm* c, const char* op, bool need_ready = true);

}  // namespace tpcomm
