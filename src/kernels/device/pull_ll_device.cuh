// The entries of the pull LL area (oneshot_pull_ll.cu, fused_pull.cu): the host LL protocol's
// entry (LLProto, ll_device.cuh: two 16-byte halves, each data word beside the step's flag) at
// the slot-relative offsets of pull_ll_layout.h, so that only the area's 16-byte alignment
// matters. Each half is one 16-byte volatile access, so a {data, flag} pair moves whole.
#pragma once

#include "kernels/device/ll_device.cuh"
#include "kernels/layout/pull_ll_layout.h"

namespace tpcomm {

// Half h of vector v's entry in the LL slot starting at `slot`.
__device__ __forceinline__ uint4* pullLLHalf(char* slot, size_t v, int h) {
  return reinterpret_cast<uint4*>(slot + pullLLHalfOffset(v, h));
}
__device__ __forceinline__ const uint4* pullLLHalf(const char* slot, size_t v, int h) {
  return reinterpret_cast<const uint4*>(slot + pullLLHalfOffset(v, h));
}

// My vector v, beside the step's flag, into my own LL slot.
__device__ __forceinline__ void pullLLPut(char* slot, size_t v, const uint4& x, uint32_t flag) {
  storeVolatile16(pullLLHalf(slot, v, 0), LLProto::pack(x, 0, flag));
  storeVolatile16(pullLLHalf(slot, v, 1), LLProto::pack(x, 1, flag));
}

// A peer's entry of vector v (LLProto::arrived and LLProto::data read it).
__device__ __forceinline__ LLProto::Raw pullLLLoad(const char* slot, size_t v) {
  return LLProto::Raw{loadVolatile(pullLLHalf(slot, v, 0)), loadVolatile(pullLLHalf(slot, v, 1))};
}

}  // namespace tpcomm
