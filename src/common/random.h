// Random bytes from the kernel's CSPRNG: unique ids (comm/rendezvous/unique_id.cc) and
// shared-memory segment names (transport/host_shm.cc) must not be guessable by another user's
// process.
#pragma once

#include <cstddef>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

// Fills n random bytes (getrandom); tpcommSystemError if the kernel refuses.
tpcommResult_t randomBytes(void* out, size_t n);

}  // namespace tpcomm
