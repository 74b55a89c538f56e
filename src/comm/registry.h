// Live communicators. A handle that is not registered (never created, or destroyed) is refused
// with tpcommInvalidUsage instead of being dereferenced.
#pragma once

#include "comm/comm.h"

namespace tpcomm {

void registerComm(tpcommComm* c);
void unregisterComm(tpcommComm* c);
// tpcommSuccess if c is a live communicator (and, with need_ready, past init), else a clear error.
tpcommResult_t checkComm(const tpcommComm* c, const char* op, bool need_ready = true);

}  // namespace tpcomm
