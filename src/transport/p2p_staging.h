// Peer-memory transport: each rank owns kNumSlots staging slots in its own device memory, which
// every peer writes into (push) through CUDA IPC (one process per GPU) or plain peer pointers
// (one process driving several GPUs). Also owns the rank's small device state and the mapped
// host word where kernels report a timeout.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/layout/device_comm.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

struct Staging {
  int device = -1;
  char* buf = nullptr;  // kNumSlots * slot_bytes, all bytes kSentinelByte when idle
  // The call fingerprints (kPrintBytes, zeroed: no record), right after the slots in the same
  // allocation, so peers reach them through the one IPC mapping of buf.
  char* prints = nullptr;
  // The pull outbox (pullOutboxBytes: slots, then zeroed flags), right after the prints.
  char* pull = nullptr;
  // The copy-engine one-shot's area (CeControl + landing slots, device_comm.h), after the prints
  // in the same allocation; null unless asked for at creation.
  char* ce = nullptr;
  size_t slot_bytes = 0;
  RankState* state = nullptr;           // device memory
  HostError* host_error = nullptr;      // pinned, mapped
  HostError* host_error_dev = nullptr;  // its device alias
};

// Allocates and clears everything on `device` (which becomes current); with_ce: also the
// copy-engine one-shot's area.
tpcommResult_t stagingCreate(int device, size_t slot_bytes, bool with_ce, Staging* s);
void stagingDestroy(Staging* s);

tpcommResult_t stagingExport(const Staging& s, cudaIpcMemHandle_t* handle);
// Maps a peer's staging buffer into this process on the current device.
tpcommResult_t stagingOpenPeer(const cudaIpcMemHandle_t& handle, int peer_rank, char** ptr);
void stagingClosePeer(char* ptr);

// Lets `device` access `peer_device` memory directly (in-process mode). Same device: no-op.
tpcommResult_t enablePeerAccess(int device, int peer_device);

}  // namespace tpcomm
