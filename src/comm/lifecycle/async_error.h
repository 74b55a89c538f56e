// What the kernels left in the mapped error word (kernels/layout/device_comm.h: HostError), copied
// out of volatile memory and put into words: a peer that never answered, one that never started the
// call, or one whose call disagreed with ours (its count, datatype or kind). Pure functions, so
// the CPU tests check the messages.
#pragma once

#include <string>

#include "kernels/layout/device_comm.h"

namespace tpcomm {

struct AsyncError {
  int code = 0;  // a tpcommResult_t; 0: none
  int peer = -1;
  int step = 0;
  int never_started = 0;  // rank + 1 whose call fingerprint never came, or 0
  int mismatch_peer = -1;
  int mismatch_step = 0;
  CallPrint mine{};
  CallPrint theirs{};
  int concurrent = 0;  // two calls of the communicator ran at once (not a mismatch)
};

AsyncError readAsyncError(const HostError& e);

// "all-reduce of 2048 x bf16"
std::string describeCall(const CallPrint& p);

// Why the communicator of `rank` is broken, for an AsyncError with a code (op: the call that
// found it; timeout_ms: the communicator's deadline).
std::string asyncErrorMessage(const char* op, int rank, int timeout_ms, const AsyncError& e);

}  // namespace tpcomm
