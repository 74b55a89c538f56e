// Argument checks of tpcommAllReduceAddRmsNorm that need no GPU (unit-tested in CI).
#pragma once

#include <cstddef>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

constexpr size_t kMaxRmsNormHidden = 65536;

struct FusedCallBuffers {
  const void* input;
  const void* residual_in;
  void* residual_out;
  void* norm_out;
  const void* gamma;
  size_t tokens;
  size_t hidden;
  int datatype;
  const tpcommRmsNormParams_t* params;
};

// On success *bytes is the all-reduced payload (tokens x hidden elements). cc_major/minor: the
// communicator's device (FP8 output needs 8.9 or newer).
tpcommResult_t validateFusedArgs(const FusedCallBuffers& a, int cc_major, int cc_minor,
                                 size_t* bytes);

}  // namespace tpcomm
