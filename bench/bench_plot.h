// tpcomm-bench --plot FILE.svg: latency against message size, one line per backend (NCCL too when
// it ran), a panel per mode (eager, graph), log-log axes. A plain SVG written here (no plotting
// library: the bench must run where only the CUDA toolkit is), which any browser opens.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_report.h"

namespace tpcomm::bench {

struct PlotInfo {
  int ranks = 0;
  std::string machine;           // "1x NVIDIA H200"
  bool ranks_share_gpu = false;  // more ranks than GPUs: labelled, its numbers are no link's
  std::string dtype;
  std::string collective;
};

// The SVG document for `rs` (only measured results are drawn); "" when nothing was measured.
std::string plotSvg(const PlotInfo& info, const std::vector<Result>& rs);

// Writes plotSvg to path; false with *why (not .svg, nothing measured, cannot write).
bool writePlot(const std::string& path, const PlotInfo& info, const std::vector<Result>& rs,
               std::string* why);

}  // namespace tpcomm::bench
