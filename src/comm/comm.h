// The communicator behind tpcommComm_t. Host-side state only; what kernels need is copied into
// `dev` (a DeviceComm passed by value at every launch).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/bootstrap.h"
#include "comm/config.h"
#include "comm/rank_info.h"
#include "kernels/device_comm.h"
#include "plan/grid.h"
#include "plan/policy.h"
#include "transport/host_shm.h"
#include "transport/p2p_staging.h"

struct ncclComm;

namespace tpcomm {

enum class CommState { kPending, kReady };

}  // namespace tpcomm

struct tpcommComm {
  tpcomm::CommState state = tpcomm::CommState::kPending;
  int rank = 0;
  int world = 0;
  int device = -1;
  int cc_major = 0;
  int cc_minor = 0;
  tpcomm::Settings settings;
  tpcomm::Staging staging;
  std::vector<char*> ipc_mapped;  // peers' staging opened through IPC (closed at destroy)
  tpcomm::DeviceComm dev{};
  tpcomm::RankInfo self{};  // this rank's handle contents (Begin -> End)
  // Rank 0 of tpcommCommInitRank: the id's rendezvous name, held while the communicator lives.
  std::unique_ptr<tpcomm::RendezvousHold> rendezvous;

  tpcomm::Fabric fabric = tpcomm::Fabric::kNvlink;
  tpcomm::TuningTable tuning;                // this machine's table (`tpcomm tune`), if any
  const tpcomm::SizeTable* tuned = nullptr;  // its rows for this world and fabric, if agreed
  bool ranks_share_gpu = false;
  bool two_islands = false;             // auto may pick the island algorithm (comm/fabric.cc)
  std::vector<int> island_of_rank;      // 0 or 1 per rank (even worlds >= 4), else empty
  bool islands_found = false;           // island_of_rank is the topology's split, not the halves
  tpcomm::LaunchKnobs knobs;            // grid shape and launch options (plan/grid.h)
  size_t oneshot_step_bytes = 0;        // bytes per one-shot step (a peer region of a slot)
  size_t chunk_vecs = 0;                // vectors per two-shot step
  size_t island_chunk_vecs = 0;         // vectors per island step
  tpcomm::HostSegment host_seg;         // host-memory transport (mapped only when used)
  size_t host_step_bytes = 0;           // bytes per host one-shot step
  size_t host_sentinel_step_bytes = 0;  // the same with the sentinel protocol (one step only)
  size_t host_chunk_vecs = 0;           // vectors per host two-shot step
  size_t bulk_step_bytes = 0;           // bytes per host bulk step (an outbox slot)

  ncclComm* nccl = nullptr;
  bool nccl_owned = false;

  tpcommStats_t stats{};
  tpcommCallInfo_t last{};
  // The last decision, reused while consecutive calls have the same size (the policy is a pure
  // function of it), so the hot path builds no strings.
  size_t cached_bytes = SIZE_MAX;
  tpcomm::Decision cached;
  std::map<size_t, bool> logged_fallback_sizes;
};
