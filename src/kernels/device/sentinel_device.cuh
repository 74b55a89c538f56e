// The sentinel protocol: an entry is the 16-byte data vector itself, and it has arrived when no
// element holds the sentinel (an all-ones NaN in every datatype, vec_device.cuh); the reader, the
// only one who reads its slots, puts the sentinel back. Full bandwidth, no flag traffic. Over peer
// memory (SentinelProto) and, for one-step calls, over pinned host memory (HostSentinelProto).
#pragma once

#include "kernels/device/vec_device.cuh"
#include "kernels/layout/device_comm.h"

namespace tpcomm {

struct SentinelProto {
  static constexpr int kEntry = 1;           // 16-byte entries per data vector
  static constexpr unsigned kBackoffNs = 0;  // polls local memory: spin
  static constexpr bool kFencedReads = false;
  struct Raw {
    uint4 a;
  };
  __device__ static Raw load(const uint4* e) { return Raw{loadVolatile(e)}; }
  template <typename T>
  __device__ static bool arrived(const Raw& r, uint32_t) {
    return !hasSentinel<T>(r.a);
  }
  __device__ static uint4 data(const Raw& r) { return r.a; }
  __device__ static void put(uint4* e, const uint4& v, uint32_t) { storeVec16(e, v); }
  __device__ static void clear(uint4* e) { storeVec16(e, sentinelVec()); }
  __device__ static char* const* bufs(const DeviceComm& c) { return c.bufs; }
  __device__ static size_t slotBytes(const DeviceComm& c) { return c.slot_bytes; }
  __device__ static char* const* prints(const DeviceComm& c) { return c.prints; }
};

// The sentinel protocol with its slots in pinned host memory (separate inboxes): a rank's vectors
// travel once, plain, into each peer's inbox, and the reader clears what it read, so PCIe carries
// the data once each way plus the clearing writes, against LL's data and flag both ways, with no
// fence or flag round trip (bulk's cost per step). Entries are stored bitwise inverted, so the
// empty state (the sentinel, inverted) is all zeros: what a new segment holds (ftruncate), so no
// page of it is touched before the transport is used. The reads poll across PCIe, so a missed
// poll pauses as LL's do. Single-step calls only (the host decides): a reader's clears of one
// call then precede its pushes of every later call by a kernel boundary. Over PCIe that keeps a
// peer's data of four steps later from landing before the clear only through the ordering of one
// GPU's posted writes, unless the host_fence knob adds the fences the PTX model needs; a clear
// that lands late is a timeout, never wrong data (docs/PROTOCOL.md, "The host sentinel's clears").
struct HostSentinelProto : SentinelProto {
  static constexpr unsigned kBackoffNs = 64;
  static constexpr bool kFencedReads = true;
  __device__ static uint4 invert(const uint4& v) { return make_uint4(~v.x, ~v.y, ~v.z, ~v.w); }
  __device__ static Raw load(const uint4* e) { return Raw{invert(loadVolatile(e))}; }
  __device__ static void put(uint4* e, const uint4& v, uint32_t) { storeVolatile16(e, invert(v)); }
  __device__ static void clear(uint4* e) { storeVolatile16(e, make_uint4(0u, 0u, 0u, 0u)); }
  __device__ static char* const* bufs(const DeviceComm& c) { return c.hsbufs; }
  __device__ static size_t slotBytes(const DeviceComm& c) { return c.hs_slot_bytes; }
  __device__ static char* const* prints(const DeviceComm& c) { return c.hprints; }
};

}  // namespace tpcomm
