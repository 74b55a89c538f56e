// Where the one-step pull with the flag in the data (oneshot_pull_ll.cu) keeps a call's entries:
// slot epoch % kNumSlots of the rank's LL area (device_comm.h, pullLLAreaOffset), vector v's
// 32-byte LL entry split in two 16-byte halves as the host LL protocol lays them out
// (ll_layout.h), but relative to the slot, so only 16-byte alignment of the area matters. A warp
// polling 32 consecutive vectors of a peer then reads two contiguous 512-byte runs, whole sectors
// over the fabric. Plain arithmetic, so the CPU tests check what the kernel and the planner use.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/layout/device_comm.h"
#include "kernels/layout/ll_layout.h"

namespace tpcomm {

// Byte offset of half h (0 or 1) of vector v's entry within an LL slot.
TPCOMM_HOST_DEVICE inline size_t pullLLHalfOffset(size_t v, int h) {
  return static_cast<size_t>(llHalfAddress(static_cast<uintptr_t>(v) * 2 * kVecBytes, h));
}

// Bytes of an LL slot that a call of `bytes` occupies: 32 per vector (a partial last vector
// included), in whole kLLBlockBytes blocks (the last block's halves lie apart within it).
TPCOMM_HOST_DEVICE inline size_t pullLLCallBytes(size_t bytes) {
  const size_t nvec = (bytes + kVecBytes - 1) / kVecBytes;
  return (nvec * 2 * kVecBytes + kLLBlockBytes - 1) / kLLBlockBytes * kLLBlockBytes;
}

// The largest call an LL slot holds (kPullLLSlotBytes is whole blocks: half of it).
constexpr size_t kPullLLMaxCallBytes = kPullLLSlotBytes / 2;
static_assert(kPullLLSlotBytes % kLLBlockBytes == 0, "LL slots are whole LL blocks");

}  // namespace tpcomm
