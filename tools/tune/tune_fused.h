// `tpcomm tune`'s measuring of the fused call (tpcommAllReduceAddRmsNorm): for rows of `hidden`
// elements, at each row count, the fused one-shot (communicators with fused_twoshot_rows=0), the
// fused two-shot (fused_twoshot_rows=1) and the unfused pair (variant=add_rmsnorm), each as the
// planner runs it on this machine, in CUDA-graph mode. Every form must give the pair's bits on
// every rank (the one rounding: tpcomm.h): a form that does not is reported and not used. The
// decision from the numbers is tune_fused_pick.h's.
#pragma once

#include <string>
#include <vector>

#include "tools/tune/tune_fused_pick.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm::cli {

struct FusedMeasureConfig {
  std::vector<int> devlist;  // rank r on GPU devlist[r]
  tpcommDataType_t dtype = tpcommBfloat16;
  size_t hidden = 7168;
  std::vector<size_t> rows;  // ascending
  int warmup = 3;
  int iters = 50;
  int reps = 9;
  bool check = true;
};

struct FusedMeasureResult {
  std::vector<FusedPoint> points;     // one per row count measured
  std::vector<std::string> failures;  // per count and form, with the reason
  long wrong = 0;                     // outputs whose bits differ from the pair's (a bug)
};

// Measures every form at every row count; progress on stderr. "" or why nothing could run (the
// communicators or buffers could not be created, or a CUDA error left the GPUs unusable).
std::string measureFused(const FusedMeasureConfig& config, FusedMeasureResult* out);

}  // namespace tpcomm::cli
