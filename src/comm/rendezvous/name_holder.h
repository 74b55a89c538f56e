// Binding rank 0's rendezvous name (the abstract Unix socket name of a unique id).
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <string>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

// Binds `fd` to `name` (addr, alen: socketAddress's). A name in use fails at once with who holds
// it (uid, pid, command where the system tells), except a copy of a name this process let go,
// kept by a child forked meanwhile, which is waited for up to timeout_ms.
tpcommResult_t bindName(int fd, const std::string& name, const sockaddr_un& addr, socklen_t alen,
                        int timeout_ms);

}  // namespace tpcomm
