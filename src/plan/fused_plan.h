// tpcommAllReduceAddRmsNorm's kernels: a fused one-shot variant (the epilogue in the all-reduce's
// kernel) where one takes the call, else the all-reduce's own plan followed by the epilogue
// kernel (fusedRules, plan/rules.h, fills CallPlan::epilogue).
#pragma once

#include "plan/planner.h"

namespace tpcomm {

// The epilogue kernel's variant (the unfused path's second kernel), with or without FP8 output.
tpcommVariant_t epilogueVariant(bool fp8);

}  // namespace tpcomm
