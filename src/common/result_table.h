// The one table of tpcommResult_t: each code with its description. resultName() (the name in
// every error message) is the enumerator's own spelling, and tpcommGetErrorString() the
// description, so neither can drift from include/tpcomm/tpcomm.h; the Python side (_abi.py,
// errors.py) is checked against the header and the library by python/tests/test_result_codes.py.
#pragma once

#include "tpcomm/tpcomm.h"

// X(code, description), in enum order (static_assert in error.cc).
#define TPCOMM_RESULT_TABLE(X)                                        \
  X(tpcommSuccess, "no error")                                        \
  X(tpcommUnhandledCudaError, "unhandled CUDA error")                 \
  X(tpcommSystemError, "system error")                                \
  X(tpcommInternalError, "internal error (please report)")            \
  X(tpcommInvalidArgument, "invalid argument")                        \
  X(tpcommInvalidUsage, "invalid usage")                              \
  X(tpcommRemoteError, "remote error (a peer failed or disagrees)")   \
  X(tpcommInProgress, "in progress")                                  \
  X(tpcommTimeout, "timeout (a peer did not answer in time)")         \
  X(tpcommNoDevice, "no CUDA device or driver")                       \
  X(tpcommNoKernelImage, "no kernel image for this GPU architecture") \
  X(tpcommUnsupported, "unsupported here")                            \
  X(tpcommFallbackRefused, "fallback refused (strict mode)")          \
  X(tpcommNcclError, "NCCL error")

namespace tpcomm {

struct ResultInfo {
  tpcommResult_t code;
  const char* name;
  const char* description;
};

// The row of `r`, or nullptr for a value outside the enum.
const ResultInfo* resultInfo(int r);

}  // namespace tpcomm
