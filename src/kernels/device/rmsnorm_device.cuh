// Device pieces of the RMSNorm epilogue shared by the kernels that end with it: a deterministic
// block sum (the same inputs give the same bits on every rank: the order of the additions is
// fixed by the thread layout alone) and the output conversions.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

#include "kernels/device/vec_device.cuh"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {

// Shared memory of a row's block sum: one float per warp, twice (rows alternate, so that a warp a
// row ahead never overwrites a sum a slower warp still reads).
struct BlockSumScratch {
  float warp[2][32];
};

// Sum of v over the block in a fixed order, and the OR of `failed` over the block, behind one
// barrier: each warp adds its lanes by a butterfly of shuffles, lane 0 publishes the warp's sum,
// and after the barrier every warp adds the published sums by the same butterfly. Every lane of
// every warp ends with the same bits (each addition's two operands are the same pair in both
// lanes that make it, and float addition commutes), so no second barrier hands a result around.
// Every thread of the block calls it, once per row, with `parity` alternating from row to row:
// a warp can only write a buffer again after the next row's barrier, which every warp reaches
// only once it has read this row's sums.
__device__ __forceinline__ float blockSumFixedOrder(float v, BlockSumScratch& s, unsigned parity,
                                                    bool failed, bool* any_failed) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, off);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warps = (blockDim.x + 31) / 32;
  if (lane == 0) s.warp[parity][warp] = v;
  *any_failed = __syncthreads_or(failed) != 0;
  float w = lane < warps ? s.warp[parity][lane] : 0.f;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) w += __shfl_xor_sync(0xFFFFFFFFu, w, off);
  return w;
}

// e4m3 with saturation to +-448 (NaN stays NaN), round to nearest even: the conversion
// FlashInfer's and TensorRT-LLM's FP8 epilogues use.
__device__ __forceinline__ uint8_t toE4m3(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

// The weight of one element: gamma, or 1 + gamma where tpcommRmsNormParams_t::weightOffset is 1
// (Gemma's RMSNorm), in fp32.
template <typename T, typename Flag>
__device__ __forceinline__ float normWeight(uint32_t gamma_bits, Flag weight_offset) {
  return weight_offset ? 1.f + bitsToFloat<T>(gamma_bits) : bitsToFloat<T>(gamma_bits);
}

// The FP8 output of one norm element (every path: the fused kernels, the epilogue kernel): the
// norm rounded to the activation dtype T first, then times 1 / scale, then e4m3, as FlashInfer's
// (TensorRT-LLM's) fusion quantizes, so an engine swapping tpcomm in gets the bits it had.
template <typename T>
__device__ __forceinline__ uint8_t normE4m3(float norm, float inv_scale) {
  return toE4m3(bitsToFloat<T>(floatToBits<T>(norm)) * inv_scale);
}

}  // namespace tpcomm
