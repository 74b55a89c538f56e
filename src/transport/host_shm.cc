#include "transport/host_shm.h"

#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "common/error.h"
#include "common/log.h"
#include "common/random.h"
#include "kernels/device_comm.h"

namespace tpcomm {
namespace {

constexpr uint64_t kSegMagic = 0x7c0a5e6d0000001ull;

struct Header {
  uint64_t magic;
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

tpcommResult_t mapName(const std::string& name, size_t bytes, bool create, char** out) {
  const int fd = create ? shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600)
                        : shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0)
    return fail(tpcommSystemError, "host transport: shm_open(%s) failed: %s%s", name.c_str(),
                strerror(errno),
                create ? ""
                       : " (rank 0's segment is gone: did rank 0 exit, or is /dev/shm "
                         "not shared between the ranks' containers?)");
  if (create && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int e = errno;
    close(fd);
    shm_unlink(name.c_str());
    return fail(tpcommSystemError,
                "host transport: ftruncate(%zu) failed: %s (is /dev/shm large "
                "enough?)",
                bytes, strerror(e));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int e = errno;
  close(fd);
  if (p == MAP_FAILED)
    return fail(tpcommSystemError, "host transport: mmap(%zu) failed: %s", bytes, strerror(e));
  *out = static_cast<char*>(p);
  return tpcommSuccess;
}

}  // namespace

size_t hostSegmentBytes(int world, size_t slot_bytes) {
  return kHostHeaderBytes + static_cast<size_t>(world) * (kNumSlots * slot_bytes) +
         static_cast<size_t>(world) * bulkOutboxBytes(slot_bytes) +
         static_cast<size_t>(world) * kNumSlots * kHostSentinelSlotBytes;
}

tpcommResult_t hostSegmentCreate(int world, size_t slot_bytes, HostSegment* seg) {
  uint8_t key[16];
  TPCOMM_CHECK(randomBytes(key, sizeof(key)));
  static const char* hex = "0123456789abcdef";
  std::string name = "/tpcomm-";
  for (uint8_t b : key) {
    name += hex[b >> 4];
    name += hex[b & 15];
  }
  const size_t bytes = hostSegmentBytes(world, slot_bytes);
  char* p = nullptr;
  TPCOMM_CHECK(mapName(name, bytes, /*create=*/true, &p));
  // ftruncate gave zeros: no LL flag has arrived anywhere, and every host sentinel inbox is empty
  // (its entries are stored inverted: HostSentinelProto). Nothing beyond the header is touched.
  Header* h = reinterpret_cast<Header*>(p);
  h->magic = kSegMagic;
  h->world = static_cast<uint32_t>(world);
  h->slot_bytes = slot_bytes;
  h->attached = 0;
  munmap(p, bytes);  // attach maps it again, through the shared per-process table
  seg->name = name;
  seg->bytes = bytes;
  TPCOMM_DEBUG(SHM, "host transport: created %s (%zu bytes)", name.c_str(), bytes);
  return tpcommSuccess;
}

tpcommResult_t hostSegmentAttach(const std::string& name, int world, size_t slot_bytes,
                                 HostSegment* seg) {
  const size_t bytes = hostSegmentBytes(world, slot_bytes);
  std::lock_guard<std::mutex> lock(g_mu);
  Mapping& m = mappings()[name];
  if (m.users == 0) {
    TPCOMM_CHECK(mapName(name, bytes, /*create=*/false, &m.host));
    const Header* h = reinterpret_cast<const Header*>(m.host);
    if (h->magic != kSegMagic || h->world != static_cast<uint32_t>(world) ||
        h->slot_bytes != slot_bytes) {
      munmap(m.host, bytes);
      mappings().erase(name);
      return fail(tpcommRemoteError,
                  "host transport: segment %s does not match this "
                  "communicator (world %d, slot %zu bytes)",
                  name.c_str(), world, slot_bytes);
    }
    const cudaError_t err =
        cudaHostRegister(m.host, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
    if (err != cudaSuccess) {
      munmap(m.host, bytes);
      mappings().erase(name);
      // Registering pins every page: on a tmpfs smaller than the segment (Docker's default
      // /dev/shm is 64 MiB) this is where it fails, not at ftruncate.
      const std::string what = "cudaHostRegister of the " + std::to_string(bytes) +
                               "-byte host transport segment (is /dev/shm large enough for it?)";
      return failCuda(err, what.c_str(), __FILE__, __LINE__);
    }
    void* dev = nullptr;
    TPCOMM_CUDA_CHECK(cudaHostGetDevicePointer(&dev, m.host, 0));
    m.dev = static_cast<char*>(dev);
    m.bytes = bytes;
  }
  ++m.users;
  seg->name = name;
  seg->host = m.host;
  seg->dev = m.dev;
  seg->bytes = bytes;
  Header* h = reinterpret_cast<Header*>(m.host);
  const uint32_t n = __atomic_add_fetch(&h->attached, 1u, __ATOMIC_ACQ_REL);
  if (n == static_cast<uint32_t>(world)) {
    shm_unlink(name.c_str());  // every rank holds a mapping: the name is no longer needed
    TPCOMM_DEBUG(SHM, "host transport: all %d ranks attached; unlinked %s", world, name.c_str());
  }
  return tpcommSuccess;
}

void hostSegmentRelease(HostSegment* seg, bool unlink) {
  if (seg->name.empty()) return;
  if (unlink) shm_unlink(seg->name.c_str());  // harmless if already unlinked
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = mappings().find(seg->name);
  if (it != mappings().end() && seg->host && --it->second.users == 0) {
    cudaHostUnregister(it->second.host);
    cudaGetLastError();
    munmap(it->second.host, it->second.bytes);
    mappings().erase(it);
  }
  *seg = HostSegment{};
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

}  // namespace tpcomm
