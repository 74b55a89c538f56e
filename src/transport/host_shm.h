// Host-memory transport for GPUs that cannot reach each other (no P2P: consumer cards, VMs,
// broken IOMMU/ACS): one POSIX shared-memory segment holds every rank's inbox slots (LL packets:
// kernels write into peers' inboxes and poll their own over PCIe) and every rank's bulk outbox
// (a rank writes its data once, its peers read it), and every rank's sentinel inbox (kernels
// write their data into peers' inboxes, readers put the empty state back), registered with
// cudaHostRegister.
// Rank 0 creates the segment only once the ranks agree to use the transport (End), with its pages
// reserved before any is touched: a full /dev/shm is then a clear error, never a SIGBUS. The name
// is the creator's pid and pid namespace plus 128 random bits, the mode 0600; it is unlinked as
// soon as the last rank has mapped it (a counter in the segment's header, counted before the
// CUDA registration), and in any case when rank 0's segment is released, so that no failure
// leaves anything in /dev/shm. A rank 0 killed (SIGKILL) before every rank mapped it cannot
// unlink it: the next rank 0 of this user on the machine reclaims it (hostSegmentReclaimStale).
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "kernels/layout/device_comm.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

// Owns a shared-memory name: unlinks it when destroyed (a failed creation, a failed End, a rank
// that never attached: every way rank 0 gives up its segment removes it).
class ShmName {
 public:
  ShmName() = default;
  explicit ShmName(std::string name) : name_(std::move(name)) {}
  ShmName(ShmName&& o) noexcept : name_(std::move(o.name_)) { o.name_.clear(); }
  ShmName& operator=(ShmName&& o) noexcept;
  ShmName(const ShmName&) = delete;
  ShmName& operator=(const ShmName&) = delete;
  ~ShmName() { unlinkNow(); }
  void unlinkNow();

 private:
  std::string name_;
};

struct HostSegment {
  std::string name;
  char* host = nullptr;  // this process's mapping
  char* dev = nullptr;   // the same memory as a device pointer (valid on every GPU)
  size_t bytes = 0;
  ShmName created;  // rank 0's: the name goes when the segment is released
};

constexpr size_t kHostHeaderBytes = 4096;
static_assert(kHostHeaderBytes % kLLBlockBytes == 0, "inboxes must start on an LL block");

size_t hostSegmentBytes(int world, size_t slot_bytes);
// A fresh name, "/tpcomm-<pid>-<pid namespace inode>-<32 hex digits>" (rank 0 puts it in its
// handle at Begin; nothing is created then).
tpcommResult_t hostSegmentName(std::string* name);

// The creator of a segment named by hostSegmentName, from its /dev/shm entry (no leading slash);
// false for any other name.
struct SegmentCreator {
  long pid = 0;
  unsigned long long pid_ns = 0;  // inode of the creator's /proc/self/ns/pid
};
bool parseSegmentName(const std::string& entry, SegmentCreator* out);

// Removes the segments in `dir` (/dev/shm) that a dead process left: names of hostSegmentName's
// pattern, regular files owned by this user, made in this process's pid namespace by a pid that
// no longer exists (kill(pid, 0) fails with ESRCH). A segment whose creator is alive, or in
// another pid namespace (a container sharing /dev/shm: its pids mean nothing here), or that is
// another user's, stays. Returns how many were removed. Called by Begin where a name is made.
int hostSegmentReclaimStale(const std::string& dir = "/dev/shm");
// Rank 0: creates the segment `name` with every page reserved (posix_fallocate; zeros: no LL
// flag has arrived) and its header written; seg->created then owns the name. A /dev/shm too small
// is tpcommSystemError naming the bytes needed, the bytes free and the fix; nothing is left.
tpcommResult_t hostSegmentCreate(const std::string& name, int world, size_t slot_bytes,
                                 HostSegment* seg);
// Every rank that uses the transport (rank 0 included, after creating it): waits up to wait_ms
// for rank 0's segment to be complete, maps it (once per process), counts itself in (the last of
// `world` unlinks it: every rank has it mapped), then registers it with CUDA. tpcommTimeout when
// it does not appear.
tpcommResult_t hostSegmentAttach(const std::string& name, int world, size_t slot_bytes, int wait_ms,
                                 HostSegment* seg);
// Unmaps (when this process's last user goes); rank 0's segment also loses its name.
void hostSegmentRelease(HostSegment* seg);
// Rank r's inbox (kNumSlots slots of slot_bytes) as a device pointer.
char* hostInbox(const HostSegment& seg, int rank, size_t slot_bytes);
// Rank r's bulk outbox (device_comm.h: bulkOutboxBytes), after every rank's inbox.
char* hostOutbox(const HostSegment& seg, int world, int rank, size_t slot_bytes);
// Rank r's sentinel inbox (kNumSlots slots of kHostSentinelSlotBytes), after every outbox.
char* hostSentinelInbox(const HostSegment& seg, int world, int rank, size_t slot_bytes);
// Rank r's call fingerprints (kPrintBytes, zeros: no record), after every sentinel inbox.
char* hostPrints(const HostSegment& seg, int world, int rank, size_t slot_bytes);

}  // namespace tpcomm
