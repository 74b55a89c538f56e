// The planner's answer for tpcommAllReduceAddRmsNorm: a fused one-shot variant (the epilogue in
// the all-reduce's kernel) where one takes the call, else the all-reduce's own plan followed by
// the epilogue kernel. Pure C++, the same on every rank (CPU-tested).
#pragma once

#include <cstddef>
#include <string>

#include "plan/planner.h"

namespace tpcomm {

// The shapes of a fused call: facts every rank shares. No pointer enters the plan (one rank's
// alignment would make the ranks run different calls); a rank whose buffers are not aligned gives
// the fused kernel aligned stand-ins (comm/fused_staging.h).
struct FusedCallArgs {
  size_t rows = 0;
  size_t hidden = 0;
  tpcommDataType_t dtype = tpcommBfloat16;
  bool fp8 = false;  // FP8 e4m3 output (params.quantScale)
};

struct FusedPlan {
  CallPlan ar;  // the all-reduce of the same bytes: what the unfused path runs first
  tpcommVariant_t variant = tpcommVariantNone;  // None when ar.decision.error is set
  int blocks = 0;                               // fused variants: the grid
  int threads = 0;
  // Fused variants: blocks per row; above 1, thread-block clusters of that many blocks each own a
  // row (blocks = clusters * cluster), a slice of it per block (kernels/fused_cluster.cu).
  int cluster = 1;
  // Fused variants with a block per row whose rows fit the registers: the one-pass kernel.
  bool one_pass = false;
  size_t region = 0;  // fused variants: vectors of a source's region of a slot
  bool pdl = false;
  std::string reason;
};

// The epilogue kernel's variant (the unfused path's second kernel), with or without FP8 output.
tpcommVariant_t epilogueVariant(bool fp8);

FusedPlan planFusedCall(const CommFacts& f, const FusedCallArgs& call);

}  // namespace tpcomm
