// Device pieces of the RMSNorm epilogue shared by the kernels that end with it: a deterministic
// block sum (the same inputs give the same bits on every rank: the order of the additions is
// fixed by the thread layout alone) and the output conversions.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

namespace tpcomm {

// Sum of v over the block, in a fixed order: lanes by a butterfly of shuffles, then warps in
// index order by warp 0. Every thread of the block must call it; every thread gets the sum.
// `scratch` holds one float per warp plus one.
__device__ __forceinline__ float blockSumFixedOrder(float v, float* scratch) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, off);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warps = (blockDim.x + 31) / 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (int w = 0; w < warps; ++w) s += scratch[w];
    scratch[warps] = s;
  }
  __syncthreads();
  const float total = scratch[warps];
  __syncthreads();  // scratch may be reused by the next call
  return total;
}

// e4m3 with saturation to +-448 (NaN stays NaN), round to nearest even: the conversion
// FlashInfer's and TensorRT-LLM's FP8 epilogues use.
__device__ __forceinline__ uint8_t toE4m3(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

}  // namespace tpcomm
