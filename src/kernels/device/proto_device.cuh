// The four protocols by which a rank's data reaches its peers and says it has arrived
// (docs/PROTOCOL.md has the safety arguments). Each is a set of static entry operations that the
// call's session (session_device.cuh) and the batched loops (batch_device.cuh) are written over:
//   SentinelProto      peer memory (NVLink / PCIe P2P)   sentinel_device.cuh
//   HostSentinelProto  pinned host memory, one step      sentinel_device.cuh
//   LLProto            pinned host memory                ll_device.cuh
//   BulkProto          pinned host memory, large calls   bulk_device.cuh
// A protocol provides:
//   kEntry        16-byte entries per 16-byte data vector in a slot
//   kBackoffNs    pause after a missed poll (0: spin, the entries are local)
//   kFencedReads  its readers fence after their clears when the host_fence knob is set
//   Raw           what one poll of an entry returns
//   load(e), arrived<T>(raw, flag), data(raw)   poll an entry, test it, take its data
//   put(e, v, flag), clear(e)                   write an entry, reset it after reading
//   bufs(c), slotBytes(c)                       every rank's slots as seen from here; slot size
//   prints(c)                                   every rank's call fingerprints (print_device.cuh)
// This header holds what all of them share: the step's flag, the poll pause, the slot geometry.
#pragma once

#include "kernels/device/ll_device.cuh"
#include "kernels/device/sentinel_device.cuh"
#include "kernels/layout/device_comm.h"

namespace tpcomm {

// Backoff between missed polls (Proto::kBackoffNs > 0): sleeps, doubling up to 1 us.
template <typename Proto>
__device__ __forceinline__ void pollPause(unsigned& ns) {
  if constexpr (Proto::kBackoffNs > 0) {
    ns = ns == 0 ? Proto::kBackoffNs : (ns < 1024 ? ns * 2 : ns);
    __nanosleep(ns);
  }
}

// The flag of a step (LL entries, bulk flags): never 0, the value of never-written (zeroed) host
// memory.
__device__ __forceinline__ uint32_t stepFlag(unsigned long long step) {
  return static_cast<uint32_t>(step % 0xFFFFFFFFull) + 1u;
}

// Called by a thread after it has read (and cleared) a range of entries. With the host_fence
// knob, readers of host memory issue fence.sc.sys here: one fence after this thread's clears and
// one after its reads of the peers' pushes, which the PTX model needs to order a clear before the
// peer's push four steps later (docs/PROTOCOL.md, "The host sentinel's clears"). A warp-wide
// instruction at the end of the thread's reads, after its last wait.
template <typename Proto>
__device__ __forceinline__ void afterReads(const DeviceComm& c) {
  if constexpr (Proto::kFencedReads) {
    if (c.host_fence) __threadfence_system();  // fence.sc.sys
  }
}

// Vectors per source region of a slot (one-shot) and per area entry (two-shot).
template <typename Proto>
__device__ __forceinline__ size_t slotVecs(const DeviceComm& c) {
  return Proto::slotBytes(c) / kVecBytes / Proto::kEntry;
}

}  // namespace tpcomm
