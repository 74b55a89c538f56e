// Where the LL protocol (LLProto, proto_device.cuh) keeps the two 16-byte halves of a 32-byte
// entry in host memory. Within each aligned block of kLLBlockBytes, the first halves of its 32
// entries lie side by side, then their second halves: a warp moving 32 consecutive entries stores
// and polls two contiguous 512-byte runs, whole 32-byte sectors, where halves stored side by side
// filled half of each sector a PCIe transfer carried. Plain arithmetic, so the CPU tests check
// the mapping that the kernels use.
#pragma once

#include <cstdint>

#include "kernels/layout/device_comm.h"

#ifdef __CUDACC__
#define TPCOMM_HOST_DEVICE __host__ __device__
#else
#define TPCOMM_HOST_DEVICE
#endif

namespace tpcomm {

// The address of half h (0 or 1) of the 32-byte-aligned entry at address `entry`. A bijection
// within each block, so entries of two ranks' regions may share a block.
TPCOMM_HOST_DEVICE inline uintptr_t llHalfAddress(uintptr_t entry, int h) {
  const uintptr_t block = entry & ~static_cast<uintptr_t>(kLLBlockBytes - 1);
  const uintptr_t index = (entry & (kLLBlockBytes - 1)) / (2 * kVecBytes);
  return block + static_cast<uintptr_t>(h) * (kLLBlockBytes / 2) + index * kVecBytes;
}

}  // namespace tpcomm
