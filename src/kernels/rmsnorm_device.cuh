// Device pieces of the RMSNorm epilogue shared by the kernels that end with it: a deterministic
// block sum (the same inputs give the same bits on every rank: the order of the additions is
// fixed by the thread layout alone) and the output conversions.
#pragma once

#include <cooperative_groups.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "kernels/algo_launch.h"  // kMaxClusterBlocks

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

// A row spread over a thread-block cluster (sm_90+): what each block shares with the others for
// one row, its part of the sum of squares and whether any of its threads gave up (a timeout, an
// abort or a mismatch; the epilogue kernel never does).
struct SlicePartial {
  float sumsq;
  int failed;
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// The row's sum over the cluster's blocks, in block order (the same bits in every block, and on
// every rank that splits the row alike), and whether any block gave up. Every thread of every
// block calls it once per row with that block's block_sum (blockSumFixedOrder), alternating
// `parity` from row to row: two buffers, so a block one row ahead never overwrites a partial that
// another block still reads (those reads precede the next row's barrier). The caller ends with a
// cluster.sync() before its blocks exit, so that none leaves while another reads its partials.
__device__ __forceinline__ float clusterSumFixedOrder(cooperative_groups::cluster_group& cluster,
                                                      SlicePartial (&mine)[2], unsigned parity,
                                                      float block_sum, bool block_failed,
                                                      bool* any_failed) {
  if (threadIdx.x == 0) mine[parity] = SlicePartial{block_sum, block_failed ? 1 : 0};
  cluster.sync();  // release / acquire: every block's partial is visible to every block
  const unsigned n = cluster.num_blocks();
  float total = 0.f;
  int failed = 0;
#pragma unroll
  for (unsigned k = 0; k < static_cast<unsigned>(kMaxClusterBlocks); ++k) {
    if (k >= n) break;
    const SlicePartial q = *cluster.map_shared_rank(&mine[parity], k);
    total += q.sumsq;
    failed |= q.failed;
  }
  *any_failed = failed != 0;
  return total;
}
#endif

// e4m3 with saturation to +-448 (NaN stays NaN), round to nearest even: the conversion
// FlashInfer's and TensorRT-LLM's FP8 epilogues use.
__device__ __forceinline__ uint8_t toE4m3(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

}  // namespace tpcomm
