// The communicator behind tpcommComm_t. Host-side state only; what kernels need is copied into
// `dev` (a DeviceComm passed by value at every launch).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/call/stream_order.h"
#include "comm/checks/buffer_check.h"
#include "comm/lifecycle/config.h"
#include "comm/lifecycle/nccl_watchdog.h"
#include "comm/lifecycle/rank_info.h"
#include "comm/node/node_span.h"
#include "comm/rendezvous/bootstrap.h"
#include "kernels/layout/device_comm.h"
#include "plan/plan_cache.h"
#include "plan/planner.h"
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
  tpcomm::TuningTable tuning;                 // this machine's table (`tpcomm tune`), if any
  const tpcomm::WorldTable* tuned = nullptr;  // its entry for this world and fabric, if agreed
  bool ranks_share_gpu = false;
  tpcomm::GridCaps grid_caps;  // grids capped so ranks sharing a GPU co-reside (fabric.cc)
  bool clusters = false;       // every rank's GPU launches thread-block clusters (fabric.cc)
  bool two_islands = false;    // auto may pick the island algorithm (comm/lifecycle/fabric.cc)
  tpcomm::FabricVerdict fabric_verdict = tpcomm::FabricVerdict::kUnknown;  // agreed (fabric.cc)
  std::vector<int> island_of_rank;  // 0 or 1 per rank (even worlds >= 4), else empty
  bool islands_found = false;       // island_of_rank is the topology's split, not the halves
  tpcomm::LaunchKnobs knobs;        // grid shape and variant options (plan/knobs.h)
  tpcomm::SlotCapacity slots;       // what one step of each slot layout holds (init)
  uint64_t ce_steps = 0;  // oneshot_ce steps enqueued: step k lands in slot k % 4 (ce_copies.h)
  tpcomm::HostSegment host_seg;  // host-memory transport (mapped only when used)

  ncclComm* nccl = nullptr;
  bool nccl_owned = false;
  // Bounds the NCCL-served calls (comm/lifecycle/nccl_watchdog.h); made on the first eager one.
  std::unique_ptr<tpcomm::NcclWatch> nccl_watch;

  // Set when the ranks span machines: then rank and world above are the local group's, the
  // global ones are here (comm/node/node_link.h).
  std::unique_ptr<tpcomm::NodeSpan> span;

  tpcommStats_t stats{};
  bool ptx_jit = false;        // kernels run from JIT-compiled PTX (kernels/runtime/image_check.h)
  uint64_t ptx_jit_calls = 0;  // tpcommCommGetPtxJitCalls
  uint64_t variant_calls[tpcommNumVariants] = {};  // tpcommCommGetVariantStats
  tpcommCallInfo_t last{};
  tpcomm::PlanCache
      plans;  // the last plan of each kind of call (comm/call/call_common.h plannedCall)
  // Stand-ins for a fused call's unaligned buffers on this rank (comm/call/fused_staging.h), and
  // areas outgrown under graph capture (freed at destroy).
  void* fused_scratch = nullptr;
  size_t fused_scratch_bytes = 0;
  std::vector<void*> retired_scratch;
  std::map<size_t, bool> logged_fallback_sizes;
  tpcomm::CheckedPointers checked_buffers;  // buffers its calls were given and accepted
  tpcomm::StreamOrder order;  // the streams of the last calls (comm/call/stream_order.h)
};
