// The LL protocol (pinned host memory, when GPUs cannot reach each other): every 4 data bytes
// travel with a 4-byte flag, the step's epoch, in one 8-byte half of a 16-byte store, as in NCCL's
// LL protocol. The reader needs no clearing pass over PCIe (stale flags are older epochs), and a
// half-written entry is never mistaken for data. Half the bandwidth; the latency path of host
// calls too large for the host sentinel inboxes.
#pragma once

#include "kernels/device/vec_device.cuh"
#include "kernels/layout/device_comm.h"
#include "kernels/layout/ll_layout.h"

namespace tpcomm {

struct LLProto {
  static constexpr int kEntry = 2;
  // Polls cross PCIe (each a read round trip); thousands of threads re-polling without pause
  // crowd out the very writes they wait for, so a missed poll sleeps (doubling up to 1 us; the
  // variants tried: docs/BENCHMARKS.md).
  static constexpr unsigned kBackoffNs = 64;
  // An LL call between two host sentinel calls carries their clear-before-push chain
  // (docs/PROTOCOL.md, "The host sentinel's clears").
  static constexpr bool kFencedReads = true;
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
  // Half h of the entry carrying v: two of its data words, each beside the flag f. put stores
  // both here; the pull LL area stores them at its own offsets (pull_ll_device.cuh).
  __device__ static uint4 pack(const uint4& v, int h, uint32_t f) {
    return h == 0 ? make_uint4(v.x, f, v.y, f) : make_uint4(v.z, f, v.w, f);
  }
  __device__ static void put(uint4* e, const uint4& v, uint32_t f) {
    storeVolatile16(half(e, 0), pack(v, 0, f));
    storeVolatile16(half(e, 1), pack(v, 1, f));
  }
  __device__ static void clear(uint4*) {}
  __device__ static char* const* bufs(const DeviceComm& c) { return c.hbufs; }
  __device__ static size_t slotBytes(const DeviceComm& c) { return c.host_slot_bytes; }
  __device__ static char* const* prints(const DeviceComm& c) { return c.hprints; }
};

}  // namespace tpcomm
