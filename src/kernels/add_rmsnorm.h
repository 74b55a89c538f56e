// The residual add + RMSNorm (+ FP8 e4m3) epilogue on its own, as one kernel: what the fused
// all-reduce's fallback paths run after an all-reduce that could not carry the epilogue (NCCL,
// or a variant without it), and the unfused side of the fused call's benchmark. Host-only header.
//
// Per row of `hidden` elements, in order (the semantics of FlashInfer's trtllm_allreduce_fusion):
//   residual_out = T(ar + residual_in)                          (fp32 add, one rounding to T)
//   norm         = residual_out * rsqrt(mean_fp32(residual_out^2) + eps) * w,
//                  w = gamma, or 1 + gamma for Gemma-style weights
//   norm_out     = T(norm), or e4m3(norm * (1 / *quant_scale)) (saturating) when quant_scale is set
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/runtime/algo_launch.h"
#include "kernels/runtime/variant_table.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

struct AddRmsNormArgs {
  const void* ar;            // [rows, hidden] of dtype: the all-reduced sums
  const void* residual_in;   // [rows, hidden] of dtype
  void* residual_out;        // [rows, hidden] of dtype; may be residual_in
  void* norm_out;            // [rows, hidden] of dtype, or of e4m3 bytes; may be ar
  const void* gamma;         // [hidden] of dtype
  const float* quant_scale;  // device pointer to one float, or null: no quantization
  size_t rows;
  size_t hidden;
  tpcommDataType_t dtype;
  float eps;
  bool weight_offset;  // tpcommRmsNormParams_t::weightOffset: w = 1 + gamma (Gemma)
};

// The epilogue kernel's grid.
struct AddRmsNormGrid {
  int blocks = 0;
  int threads = 0;
};

// The epilogue kernel's launch, as planned (plan/fused_plan.cc: CallPlan::epilogue): which kernel
// (add_rmsnorm or add_rmsnorm_fp8, as quant_scale says) and its grid.
struct AddRmsNormLaunch {
  tpcommVariant_t variant = kNoVariant;
  AddRmsNormGrid grid;
};

// The grid for rows of `hidden` elements: a block per row, a thread per vector (at most 512),
// up to max_blocks blocks (0: up to 4096; the blocks loop over the rows beyond).
AddRmsNormGrid addRmsNormGrid(size_t rows, size_t hidden, size_t elem_bytes, int max_blocks);

// Launches the kernel on `s` as `g` says; the caller has validated the arguments.
tpcommResult_t launchAddRmsNorm(const AddRmsNormArgs& a, const AddRmsNormLaunch& g, cudaStream_t s);

}  // namespace tpcomm
