// Host-memory transport for GPUs that cannot reach each other (no P2P: consumer cards, VMs,
// broken IOMMU/ACS): one POSIX shared-memory segment holds every rank's inbox slots (LL packets:
// kernels write into peers' inboxes and poll their own over PCIe) and every rank's bulk outbox
// (a rank writes its data once, its peers read it), and every rank's sentinel inbox (kernels
// write their data into peers' inboxes, readers put the empty state back), registered with
// cudaHostRegister.
// The name is 128 random bits, the mode 0600, and the name is unlinked as soon as the last rank
// has mapped it (a counter in the segment's header), so nothing lingers in /dev/shm.
#pragma once

#include <cstddef>
#include <string>

#include "kernels/device_comm.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

struct HostSegment {
  std::string name;
  char* host = nullptr;  // this process's mapping
  char* dev = nullptr;   // the same memory as a device pointer (valid on every GPU)
  size_t bytes = 0;
};

constexpr size_t kHostHeaderBytes = 4096;
static_assert(kHostHeaderBytes % kLLBlockBytes == 0, "inboxes must start on an LL block");

size_t hostSegmentBytes(int world, size_t slot_bytes);
// Rank 0: creates and maps a zeroed segment (zero = no LL flag has arrived).
tpcommResult_t hostSegmentCreate(int world, size_t slot_bytes, HostSegment* seg);
// Every rank that uses the transport (rank 0 included, with its created segment): maps it (once
// per process), registers it with CUDA, and counts itself in; the last of `world` unlinks it.
tpcommResult_t hostSegmentAttach(const std::string& name, int world, size_t slot_bytes,
                                 HostSegment* seg);
// Unmaps (when this process's last user goes); with unlink, also removes the name.
void hostSegmentRelease(HostSegment* seg, bool unlink);
// Rank r's inbox (kNumSlots slots of slot_bytes) as a device pointer.
char* hostInbox(const HostSegment& seg, int rank, size_t slot_bytes);
// Rank r's bulk outbox (device_comm.h: bulkOutboxBytes), after every rank's inbox.
char* hostOutbox(const HostSegment& seg, int world, int rank, size_t slot_bytes);
// Rank r's sentinel inbox (kNumSlots slots of kHostSentinelSlotBytes), after every outbox.
char* hostSentinelInbox(const HostSegment& seg, int world, int rank, size_t slot_bytes);

}  // namespace tpcomm
