// Which machine a rank runs on, as the ranks of a communicator tell each other (rank_info.h):
// ranks with the same host id form one machine's tpcomm group (comm/node_layout.h).
#pragma once

#include <string>

namespace tpcomm {

constexpr size_t kHostIdBytes = 64;  // RankInfo::host_id, NUL included

// override_id: TPCOMM_HOST_ID (tests simulate machines with it), used as given when not empty;
// else a hash of the boot id and the hostname: two containers of one kernel share the boot id,
// two machines cloned from one image share the hostname, the pair tells them apart.
std::string hostIdFrom(const std::string& override_id, const std::string& boot_id,
                       const std::string& hostname);
// This process's host id (TPCOMM_HOST_ID, /proc/sys/kernel/random/boot_id, gethostname).
std::string thisHostId();

}  // namespace tpcomm
