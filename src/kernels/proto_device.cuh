// How data and "it has arrived" travel through a staging slot. The algorithms (oneshot.cu,
// twoshot.cu) are written once against this interface:
//
// SentinelProto (peer GPU memory over NVLink/PCIe P2P): an entry is the 16-byte vector itself;
//   it has arrived when no element holds the sentinel; the reader, the only one who reads its
//   slots, puts the sentinel back. Full bandwidth, no flag traffic.
// LLProto (pinned host memory, when GPUs cannot reach each other): every 4 data bytes travel with
//   a 4-byte flag, the step's epoch, in one 8-byte half of a 16-byte store, as in NCCL's LL
//   protocol: the reader needs no clearing pass over PCIe (stale flags are older epochs), and a
//   half-written entry is never mistaken for data. Half the bandwidth; the latency path.
// BulkProto (pinned host memory, larger messages): a rank writes its data once, plain, into its
//   own outbox (device_comm.h), and its peers read it from there; arrival is one flag per block
//   and step, set after a system-scope fence once the block's share is written, and polled by
//   one thread of the reading block (NCCL's "Simple" protocol does the same per chunk). Every
//   byte crosses PCIe once each way, and PCIe carries one poll per block and step instead of LL's
//   poll per entry and flag word per data word; the price is a fence and a flag round trip per
//   step, so LL stays the small-message path. Bounded by one write plus one read of the message.
#pragma once

#include "kernels/device_comm.h"
#include "kernels/ll_layout.h"
#include "kernels/vec_device.cuh"

namespace tpcomm {

struct SentinelProto {
  static constexpr int kEntry = 1;           // 16-byte entries per data vector
  static constexpr bool kOutbox = false;     // pushes into every peer's slot
  static constexpr unsigned kBackoffNs = 0;  // polls local memory: spin
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
};

// The sentinel protocol with its slots in pinned host memory (separate inboxes): a rank's vectors
// travel once, plain, into each peer's inbox, and the reader clears what it read, so PCIe carries
// the data once each way plus the clearing writes, against LL's data and flag both ways, with no
// fence or flag round trip (bulk's cost per step). Entries are stored bitwise inverted, so the
// empty state (the sentinel, inverted) is all zeros: what a new segment holds (ftruncate), and no
// page of it is touched before the transport is used (filling it with ones at creation touched
// pages of a segment that most communicators never use, on a /dev/shm that may be too small for
// it). The reads poll across PCIe, so a missed poll pauses as LL's do. Single-step calls only
// (the host decides, launch.cu): a reader's clears of one call then precede its pushes of every
// later call by a kernel boundary, which is what keeps a peer's data of four steps later from
// landing before the clear (docs/PROTOCOL.md).
struct HostSentinelProto : SentinelProto {
  static constexpr unsigned kBackoffNs = 64;
  __device__ static uint4 invert(const uint4& v) { return make_uint4(~v.x, ~v.y, ~v.z, ~v.w); }
  __device__ static Raw load(const uint4* e) { return Raw{invert(loadVolatile(e))}; }
  __device__ static void put(uint4* e, const uint4& v, uint32_t) { storeVolatile16(e, invert(v)); }
  __device__ static void clear(uint4* e) { storeVolatile16(e, make_uint4(0u, 0u, 0u, 0u)); }
  __device__ static char* const* bufs(const DeviceComm& c) { return c.hsbufs; }
  __device__ static size_t slotBytes(const DeviceComm& c) { return c.hs_slot_bytes; }
};

struct LLProto {
  static constexpr int kEntry = 2;
  static constexpr bool kOutbox = false;
  // Polls cross PCIe (each a read round trip); thousands of threads re-polling without pause
  // crowd out the very writes they wait for, so a missed poll sleeps (doubling up to 1 us).
  // (Measured on 2x H200 and not kept: sleeping before the first poll as well, 0.25-1.5 us: 1 KiB
  // lost 0.1-0.9 us, 4-256 KiB within noise; capping the sleep at 0 (spin), 128, 256, 512 or
  // 2048 ns instead of 1 us: all within noise from 1 to 256 KiB.)
  static constexpr unsigned kBackoffNs = 64;
  struct Raw {
    uint4 a, b;
  };
  // Where the two 16-byte halves of the 32-byte entry at `e` live (ll_layout.h: whole sectors
  // over PCIe). Every access goes through it; slots are 1 KiB-aligned whole blocks (config.cc).
  __device__ static uint4* half(const uint4* e, int h) {
    return reinterpret_cast<uint4*>(llHalfAddress(reinterpret_cast<uintptr_t>(e), h));
  }
  __device__ static Raw load(const uint4* e) {
    return Raw{loadVolatile(half(e, 0)), loadVolatile(half(e, 1))};
  }
  template <typename T>
  __device__ static bool arrived(const Raw& r, uint32_t f) {
    return r.a.y == f && r.a.w == f && r.b.y == f && r.b.w == f;
  }
  __device__ static uint4 data(const Raw& r) { return make_uint4(r.a.x, r.a.z, r.b.x, r.b.z); }
  __device__ static void put(uint4* e, const uint4& v, uint32_t f) {
    storeVolatile16(half(e, 0), make_uint4(v.x, f, v.y, f));
    storeVolatile16(half(e, 1), make_uint4(v.z, f, v.w, f));
  }
  __device__ static void clear(uint4*) {}
  __device__ static char* const* bufs(const DeviceComm& c) { return c.hbufs; }
  __device__ static size_t slotBytes(const DeviceComm& c) { return c.host_slot_bytes; }
};

struct BulkProto {
  static constexpr int kEntry = 1;
  static constexpr bool kOutbox = true;      // writes its own outbox once; readers poll flags
  static constexpr unsigned kBackoffNs = 0;  // entries are never polled (arrived is always true)
  struct Raw {
    uint4 a;
  };
  // Volatile: host memory a peer rewrites every kNumSlots steps must not be served from cache.
  __device__ static Raw load(const uint4* e) { return Raw{loadVolatile(e)}; }
  template <typename T>
  __device__ static bool arrived(const Raw&, uint32_t) {
    return true;  // the block's flag said so before any entry is read
  }
  __device__ static uint4 data(const Raw& r) { return r.a; }
  __device__ static void put(uint4* e, const uint4& v, uint32_t) { storeVec16(e, v); }
  __device__ static void clear(uint4*) {}
  __device__ static size_t slotBytes(const DeviceComm& c) { return c.out_slot_bytes; }
  // Rank r's flag of slot `slot` and block `block`.
  __device__ static uint32_t* flag(const DeviceComm& c, int r, size_t slot, unsigned block) {
    char* flags = c.hout + static_cast<size_t>(r) * c.out_stride + kNumSlots * c.out_slot_bytes;
    return reinterpret_cast<uint32_t*>(flags) + slot * kBulkFlagBlocks + block;
  }
};

// Backoff between missed polls (Proto::kBackoffNs > 0): sleeps, doubling up to 1 us.
template <typename Proto>
__device__ __forceinline__ void pollPause(unsigned& ns) {
  if constexpr (Proto::kBackoffNs > 0) {
    ns = ns == 0 ? Proto::kBackoffNs : (ns < 1024 ? ns * 2 : ns);
    __nanosleep(ns);
  }
}

// The LL flag of a step: never 0, the value of never-written (zeroed) host memory.
__device__ __forceinline__ uint32_t stepFlag(unsigned long long step) {
  return static_cast<uint32_t>(step % 0xFFFFFFFFull) + 1u;
}

// Vectors per source region of a slot (one-shot) and per area entry (two-shot).
template <typename Proto>
__device__ __forceinline__ size_t slotVecs(const DeviceComm& c) {
  return Proto::slotBytes(c) / kVecBytes / Proto::kEntry;
}

}  // namespace tpcomm
