// `tpcomm tune`'s measuring of the quantized wire (issue 37; plan/wire_plan.cc): each codec's
// all-reduce in the form it takes on this fabric (tune_wire_pick.h, wireForm), on communicators
// forced to that form and opted in from every size (wire=<codec>,wire_min_bytes=0), in CUDA-graph
// mode, at the main sweep's sizes from 1 MiB. A result counts only where the codec's variant ran
// and every rank's output has the same bits within the codec's error bound (tune_wire_check.h).
// The decision from the numbers is tune_wire_pick.h's.
#pragma once

#include <string>
#include <vector>

#include "tools/tune/tune_wire_pick.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm::cli {

struct WireMeasureConfig {
  std::vector<int> devlist;  // rank r on GPU devlist[r]
  tpcommDataType_t dtype = tpcommBfloat16;
  std::vector<size_t> sizes;     // bytes, ascending
  int form = tpcommAlgoTwoShot;  // the algorithm forced (wireForm)
  int warmup = 5;
  int iters = 50;
  int reps = 9;
  bool check = true;
};

struct WireMeasureResult {
  std::vector<WireRun> runs;          // int8, int4, fp8, fp8_e5m2, each a time per size
  std::vector<std::string> skipped;   // "int4: why" for codecs never measured
  std::vector<std::string> failures;  // per size and codec, with the reason
  long wrong = 0;                     // outputs outside the bound or unlike across ranks (a bug)
};

// Measures every codec at every size; progress on stderr. "" or why nothing could run (buffers
// could not be allocated, a CUDA error left the GPUs unusable).
std::string measureWire(const WireMeasureConfig& config, WireMeasureResult* out);

}  // namespace tpcomm::cli
