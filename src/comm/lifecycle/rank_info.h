// What one rank tells the others at init: identity (machine, process, GPU), how to reach its
// staging memory, and the settings that every rank must share. Serialised as the bytes of a
// tpcommRankHandle, so frameworks can all-gather it with their own process group.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "comm/lifecycle/config.h"
#include "comm/lifecycle/machine_view.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

constexpr uint32_t kInfoMagic = 0x7c0a4a4eu;
constexpr uint32_t kInfoVersion = 4;  // 2: MachineView's occupancy; 3: host_id; 4: knobs

struct RankInfo {
  uint32_t magic;
  uint32_t version;
  int32_t rank;
  int32_t nranks;
  int32_t pid;
  int32_t device;  // CUDA ordinal in the owner's process
  int32_t cc_major;
  int32_t cc_minor;
  char boot_id[40];  // /proc/sys/kernel/random/boot_id: every rank on one machine
  char
      host_id[64];  // the machine (comm/lifecycle/host_id.h): ranks sharing it form the local group
  char pci_bus_id[32];
  char pci_bus_id_norm[16];  // normalized (topo::normalizeBusId), as in MachineView
  cudaIpcMemHandle_t staging;
  uint64_t slot_bytes;
  int32_t timeout_ms;
  int32_t max_blocks;
  int32_t transport;
  int32_t algo;  // forced algorithm: every rank must run the same kernels
  int32_t strict;
  int32_t nccl_mode;
  int32_t nccl_wanted;  // rank 0 only: an NCCL unique id follows
  char nccl_id[128];
  char host_shm[64];  // host transport: the shared-memory name (unused when empty)
  // The launch knobs that shape plans, where not the defaults (planKnobsText): every rank plans
  // every call alike only with the same ones.
  char knobs[512];
  MachineView view;  // what this rank sees (fabric and tuning are agreed from every view)
};
static_assert(sizeof(RankInfo) <= TPCOMM_RANK_HANDLE_BYTES, "RankInfo exceeds the handle size");

tpcommResult_t fillIdentity(int rank, int nranks, int device, const Settings& s, RankInfo* out);
void packHandle(const RankInfo& info, tpcommRankHandle* h);
// Checks every field of rank r's handle: strings NUL-terminated, values in range
// (tpcommInvalidArgument naming the rank and the field). Magic and version are checked first.
tpcommResult_t checkHandleFields(const RankInfo& info, int r);
// Unpacks all handles, checks each one's fields, and that they describe one communicator with one
// set of settings (a mismatch is tpcommRemoteError naming the rank and field). Which machine each
// rank is on is comm/node/node_layout.h's job.
tpcommResult_t unpackHandles(const tpcommRankHandle* all, int nranks, RankInfo* out);

}  // namespace tpcomm
