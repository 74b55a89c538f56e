// Which machine a rank runs on, as the ranks of a communicator tell each other (rank_info.h):
// ranks with the same host id form one machine's tpcomm group (comm/node/node_layout.h).
#pragma once

#include <string>

namespace tpcomm {

constexpr size_t kHostIdBytes = 64;  // RankInfo::host_id, NUL included

// override_id: TPCOMM_HOST_ID (tests simulate machines with it), used as given when not empty;
// else a hash of the boot id, which the kernel draws at random at every boot: machines cloned
// from one image still differ, and containers of one machine (each with its own hostname) share
// it, so they stay one machine's group as they were before communicators spanned machines. The
// hostname only where the boot id cannot be read.
std::string hostIdFrom(const std::string& override_id, const std::string& boot_id,
                       const std::string& hostname);
// This process's host id (TPCOMM_HOST_ID, /proc/sys/kernel/random/boot_id, gethostname).
std::string thisHostId();

}  // namespace tpcomm
