#include "transport/host_shm.h"

#include <cuda_runtime_api.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "common/random.h"
#include "common/unique_fd.h"
#include "kernels/layout/device_comm.h"

namespace tpcomm {
namespace {

constexpr uint64_t kSegMagic = 0x7c0a5e6d0000001ull;
constexpr size_t kMiB = size_t{1} << 20;

struct Header {
  uint64_t magic;  // written last (release): a peer that reads it sees the rest
  uint32_t world;
  uint32_t pad;
  uint64_t slot_bytes;
  uint32_t attached;  // ranks that have mapped the segment (atomic)
};

// One mapping per process and name (ranks of one process share it; CUDA registers a range once).
struct Mapping {
  char* host = nullptr;
  char* dev = nullptr;
  size_t bytes = 0;
  int users = 0;
};
std::mutex g_mu;
std::map<std::string, Mapping>& mappings() {
  static auto* m = new std::map<std::string, Mapping>();
  return *m;
}

// The error for a /dev/shm that cannot hold the segment, with what it would take.
tpcommResult_t failNoRoom(size_t bytes, int err) {
  struct statvfs vfs;
  size_t free_bytes = 0, total = 0;
  if (statvfs("/dev/shm", &vfs) == 0) {
    free_bytes = static_cast<size_t>(vfs.f_bavail) * vfs.f_frsize;
    total = static_cast<size_t>(vfs.f_blocks) * vfs.f_frsize;
  }
  const size_t want_mib = (total - free_bytes + bytes + kMiB - 1) / kMiB;
  return fail(tpcommSystemError,
              "host transport: /dev/shm cannot hold the %zu-byte host segment: %zu bytes free of "
              "%zu (posix_fallocate: %s). Give it at least %zu MiB (docker run "
              "--shm-size=%zum, or remount /dev/shm larger), or lower TPCOMM_BUFFER_BYTES (host "
              "inboxes take a quarter of it per rank, the sentinel inboxes 4 MiB per rank "
              "whatever the setting)",
              bytes, free_bytes, total, strerror(err), want_mib, want_mib);
}

// The header of a complete segment (magic set) as a copy; false while rank 0 is still creating it.
bool readHeader(int fd, Header* out) {
  void* p = mmap(nullptr, kHostHeaderBytes, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return false;
  const Header* h = static_cast<const Header*>(p);
  out->magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
  out->world = h->world;
  out->slot_bytes = h->slot_bytes;
  munmap(p, kHostHeaderBytes);
  return out->magic != 0;
}

// Waits until rank 0's segment `name` is complete (header written, which rank 0 does after
// reserving every page), checks it is this user's and this communicator's, then maps it whole.
tpcommResult_t openSegment(const std::string& name, int world, size_t slot_bytes, int wait_ms,
                           char** out) {
  const size_t bytes = hostSegmentBytes(world, slot_bytes);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  const char* state = "does not exist";
  while (true) {
    const UniqueFd fd(shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0));
    if (fd.get() < 0 && errno != ENOENT)
      return fail(tpcommSystemError, "host transport: shm_open(%s) failed: %s", name.c_str(),
                  strerror(errno));
    if (fd.get() >= 0) {
      state = "is not complete";
      struct stat st;
      if (fstat(fd.get(), &st) != 0)
        return fail(tpcommSystemError, "host transport: fstat(%s) failed: %s", name.c_str(),
                    strerror(errno));
      if (st.st_uid != geteuid() || (st.st_mode & 077) != 0)
        return fail(tpcommRemoteError,
                    "host transport: segment %s is not this user's own (uid %u, mode %04o): "
                    "not used",
                    name.c_str(), static_cast<unsigned>(st.st_uid),
                    static_cast<unsigned>(st.st_mode & 07777));
      Header h{};
      if (static_cast<size_t>(st.st_size) >= kHostHeaderBytes && readHeader(fd.get(), &h)) {
        if (h.magic != kSegMagic || h.world != static_cast<uint32_t>(world) ||
            h.slot_bytes != slot_bytes || static_cast<size_t>(st.st_size) != bytes)
          return fail(tpcommRemoteError,
                      "host transport: segment %s (%lld bytes, world %u, slot %zu bytes) does "
                      "not match this communicator (world %d, slot %zu bytes)",
                      name.c_str(), static_cast<long long>(st.st_size), h.world,
                      static_cast<size_t>(h.slot_bytes), world, slot_bytes);
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
        if (p == MAP_FAILED)
          return fail(tpcommSystemError, "host transport: mmap(%zu) of %s failed: %s", bytes,
                      name.c_str(), strerror(errno));
        *out = static_cast<char*>(p);
        return tpcommSuccess;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return fail(tpcommTimeout,
                  "host transport: rank 0's segment %s %s after %d ms (rank 0 creates it in "
                  "tpcommCommInitRankEnd: did it fail there, e.g. /dev/shm full, or exit? Is "
                  "/dev/shm shared between the ranks' containers?)",
                  name.c_str(), state, wait_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Counts this rank in to the segment mapped at `host`; the last of `world` unlinks its name (every
// rank has it mapped: the name is no longer needed, and nothing is left should a rank die now).
void countIn(const char* host, const std::string& name, int world) {
  Header* h = reinterpret_cast<Header*>(const_cast<char*>(host));
  const uint32_t n = __atomic_add_fetch(&h->attached, 1u, __ATOMIC_ACQ_REL);
  if (n == static_cast<uint32_t>(world)) {
    shm_unlink(name.c_str());
    TPCOMM_DEBUG(SHM, "host transport: all %d ranks mapped %s; unlinked it", world, name.c_str());
  }
}

// The inode of this process's pid namespace (0: unknown, e.g. no /proc).
unsigned long long pidNamespace() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<unsigned long long>(st.st_ino) : 0;
}

// Reads a decimal number of 1..max_digits digits at *p (no sign, no leading zero) and moves past.
bool readDecimal(const char** p, int max_digits, unsigned long long* out) {
  const char* q = *p;
  unsigned long long v = 0;
  int n = 0;
  for (; *q >= '0' && *q <= '9'; ++q, ++n) {
    if (n == max_digits || (n == 1 && v == 0)) return false;
    v = v * 10 + static_cast<unsigned>(*q - '0');
  }
  if (n == 0) return false;
  *p = q;
  *out = v;
  return true;
}

// Registers a new mapping of `name` with CUDA and enters it in the table (g_mu held); unmaps it
// on failure.
tpcommResult_t registerMapping(const std::string& name, char* host, size_t bytes,
                               std::map<std::string, Mapping>::iterator* out) {
  const cudaError_t err =
      cudaHostRegister(host, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
  if (err != cudaSuccess) {
    munmap(host, bytes);
    const std::string what =
        "cudaHostRegister of the " + std::to_string(bytes) + "-byte host transport segment";
    return failCuda(err, what.c_str(), __FILE__, __LINE__);
  }
  void* dev = nullptr;
  const cudaError_t derr = cudaHostGetDevicePointer(&dev, host, 0);
  if (derr != cudaSuccess) {
    cudaHostUnregister(host);
    munmap(host, bytes);
    return failCuda(derr, "cudaHostGetDevicePointer of the host transport segment", __FILE__,
                    __LINE__);
  }
  *out = mappings().emplace(name, Mapping{host, static_cast<char*>(dev), bytes, 0}).first;
  return tpcommSuccess;
}

}  // namespace

ShmName& ShmName::operator=(ShmName&& o) noexcept {
  if (this != &o) {
    unlinkNow();
    name_ = std::move(o.name_);
    o.name_.clear();
  }
  return *this;
}

void ShmName::unlinkNow() {
  if (name_.empty()) return;
  // ENOENT is normal: the last rank to attach already unlinked it.
  if (shm_unlink(name_.c_str()) == 0)
    TPCOMM_DEBUG(SHM, "host transport: unlinked %s", name_.c_str());
  name_.clear();
}

size_t hostSegmentBytes(int world, size_t slot_bytes) {
  return kHostHeaderBytes + static_cast<size_t>(world) * (kNumSlots * slot_bytes) +
         static_cast<size_t>(world) * bulkOutboxBytes(slot_bytes) +
         static_cast<size_t>(world) * kNumSlots * kHostSentinelSlotBytes +
         static_cast<size_t>(world) * kPrintBytes;
}

tpcommResult_t hostSegmentName(std::string* name) {
  uint8_t key[16];
  TPCOMM_CHECK(randomBytes(key, sizeof(key)));
  static const char* hex = "0123456789abcdef";
  *name = "/tpcomm-" + std::to_string(getpid()) + "-" + std::to_string(pidNamespace()) + "-";
  for (uint8_t b : key) {
    *name += hex[b >> 4];
    *name += hex[b & 15];
  }
  return tpcommSuccess;
}

bool parseSegmentName(const std::string& entry, SegmentCreator* out) {
  static const char kPrefix[] = "tpcomm-";
  if (entry.compare(0, sizeof(kPrefix) - 1, kPrefix) != 0) return false;
  const char* p = entry.c_str() + sizeof(kPrefix) - 1;
  unsigned long long pid = 0, ns = 0;
  if (!readDecimal(&p, 10, &pid) || pid == 0 || pid > 0x7fffffff || *p++ != '-') return false;
  if (!readDecimal(&p, 20, &ns) || *p++ != '-') return false;
  for (int i = 0; i < 32; ++i, ++p)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
  if (*p != '\0' || p != entry.c_str() + entry.size()) return false;
  out->pid = static_cast<long>(pid);
  out->pid_ns = ns;
  return true;
}

int hostSegmentReclaimStale(const std::string& dir) {
  const unsigned long long own_ns = pidNamespace();
  if (own_ns == 0) return 0;  // cannot tell whose pids the names carry
  DIR* d = opendir(dir.c_str());
  if (!d) return 0;
  std::vector<std::pair<std::string, long>> stale;  // entry, creator pid
  while (const dirent* e = readdir(d)) {
    SegmentCreator c;
    if (!parseSegmentName(e->d_name, &c) || c.pid_ns != own_ns || c.pid == getpid()) continue;
    // ESRCH only: EPERM is a live process of another user.
    if (kill(static_cast<pid_t>(c.pid), 0) != 0 && errno == ESRCH)
      stale.emplace_back(e->d_name, c.pid);
  }
  closedir(d);
  int removed = 0;
  for (const auto& [entry, pid] : stale) {
    const std::string path = dir + "/" + entry;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) continue;
    if (unlink(path.c_str()) != 0) continue;
    ++removed;
    TPCOMM_INFO(SHM,
                "host transport: removed %s (%lld bytes), a segment left by pid %ld, which is "
                "gone (killed before every rank had mapped it)",
                path.c_str(), static_cast<long long>(st.st_size), pid);
  }
  return removed;
}

tpcommResult_t hostSegmentCreate(const std::string& name, int world, size_t slot_bytes,
                                 HostSegment* seg) {
  const size_t bytes = hostSegmentBytes(world, slot_bytes);
  const UniqueFd fd(shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600));
  if (fd.get() < 0)
    return fail(tpcommSystemError, "host transport: shm_open(%s) failed: %s", name.c_str(),
                strerror(errno));
  ShmName created(name);  // from here on, every way out that fails removes the name
  // tmpfs accepts an ftruncate beyond its free space and raises SIGBUS at the first touch of a
  // page it cannot back: reserve every page first (zeros: no LL flag, every sentinel inbox empty,
  // its entries stored inverted: HostSentinelProto). This also sets the size, last.
  const int err = posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes));
  if (err == ENOSPC) return failNoRoom(bytes, err);
  if (err != 0)
    return fail(tpcommSystemError, "host transport: posix_fallocate(%s, %zu bytes) failed: %s",
                name.c_str(), bytes, strerror(err));
  void* p = mmap(nullptr, kHostHeaderBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED)
    return fail(tpcommSystemError, "host transport: mmap of %s failed: %s", name.c_str(),
                strerror(errno));
  Header* h = static_cast<Header*>(p);
  h->world = static_cast<uint32_t>(world);
  h->slot_bytes = slot_bytes;
  h->attached = 0;
  __atomic_store_n(&h->magic, kSegMagic, __ATOMIC_RELEASE);  // complete: peers may map it
  munmap(p, kHostHeaderBytes);  // attach maps it whole, through the shared per-process table
  seg->name = name;
  seg->bytes = bytes;
  seg->created = std::move(created);
  TPCOMM_DEBUG(SHM, "host transport: created %s (%zu bytes, reserved)", name.c_str(), bytes);
  return tpcommSuccess;
}

tpcommResult_t hostSegmentAttach(const std::string& name, int world, size_t slot_bytes, int wait_ms,
                                 HostSegment* seg) {
  const size_t bytes = hostSegmentBytes(world, slot_bytes);
  std::unique_lock<std::mutex> lock(g_mu);
  auto it = mappings().find(name);
  if (it == mappings().end()) {
    lock.unlock();  // waiting for rank 0 holds no lock: other communicators of this process go on
    char* host = nullptr;
    TPCOMM_CHECK(openSegment(name, world, slot_bytes, wait_ms, &host));
    // Mapped: counted now, not after the CUDA registration (slow for a large segment, and it may
    // fail), so that the name goes as soon as every rank has the memory.
    countIn(host, name, world);
    lock.lock();
    it = mappings().find(name);
    if (it != mappings().end())
      munmap(host, bytes);  // another rank of this process mapped it meanwhile
    else
      TPCOMM_CHECK(registerMapping(name, host, bytes, &it));
  } else {
    countIn(it->second.host, name, world);
  }
  Mapping& m = it->second;
  ++m.users;
  seg->name = name;
  seg->host = m.host;
  seg->dev = m.dev;
  seg->bytes = bytes;
  return tpcommSuccess;
}

void hostSegmentRelease(HostSegment* seg) {
  if (seg->host) {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = mappings().find(seg->name);
    if (it != mappings().end() && --it->second.users == 0) {
      cudaHostUnregister(it->second.host);
      cudaGetLastError();
      munmap(it->second.host, it->second.bytes);
      mappings().erase(it);
    }
  }
  *seg = HostSegment{};  // drops rank 0's name (ShmName), if this is rank 0's segment
}

char* hostInbox(const HostSegment& seg, int rank, size_t slot_bytes) {
  return seg.dev + kHostHeaderBytes + static_cast<size_t>(rank) * kNumSlots * slot_bytes;
}

char* hostOutbox(const HostSegment& seg, int world, int rank, size_t slot_bytes) {
  return hostInbox(seg, world, slot_bytes) +
         static_cast<size_t>(rank) * bulkOutboxBytes(slot_bytes);
}

char* hostSentinelInbox(const HostSegment& seg, int world, int rank, size_t slot_bytes) {
  return hostOutbox(seg, world, world, slot_bytes) +
         static_cast<size_t>(rank) * kNumSlots * kHostSentinelSlotBytes;
}

char* hostPrints(const HostSegment& seg, int world, int rank, size_t slot_bytes) {
  return hostSentinelInbox(seg, world, world, slot_bytes) + static_cast<size_t>(rank) * kPrintBytes;
}

}  // namespace tpcomm
