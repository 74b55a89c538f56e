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

// The all-reduced payload of tokens rows of hidden elements, for the fused call and its Explain:
// tpcommInvalidArgument, naming op, for a hidden outside 1..kMaxRmsNormHidden, a datatype tpcomm
// does not reduce, or a size that does not fit in size_t.
tpcommResult_t fusedPayloadBytes(const char* op, size_t tokens, size_t hidden, int datatype,
                                 size_t* bytes);

// On success *bytes is the all-reduced payload (tokens x hidden elements). cc_major/minor: the
// communicator's device (FP8 output needs 8.9 or newer).
tpcommResult_t validateFusedArgs(const FusedCallBuffers& a, int cc_major, int cc_minor,
                                 size_t* bytes);

}  // namespace tpcomm
