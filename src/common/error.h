// One way to fail: every internal function returns tpcommResult_t, records a message that names
// the operation and the bad value (thread-local, read with tpcommGetLastError), and callers pass
// the result up with TPCOMM_CHECK, adding nothing when the message is already set.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

// Records msg as this thread's last error (logged at WARN) and returns result.
tpcommResult_t fail(tpcommResult_t result, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
// Converts a CUDA error into tpcommUnhandledCudaError (or tpcommNoDevice for missing driver/GPU).
tpcommResult_t failCuda(cudaError_t err, const char* what, const char* file, int line);
void clearLastError();
const char* lastError();
// Puts back a message saved from lastError() (not logged again): for a caller whose cleanup after
// a failure must not replace the failure's message with its own.
void setLastError(const std::string& msg);
const char* resultName(tpcommResult_t r);

}  // namespace tpcomm

#define TPCOMM_CHECK(call)                                \
  do {                                                    \
    tpcommResult_t tpcomm_res_ = (call);                  \
    if (tpcomm_res_ != tpcommSuccess) return tpcomm_res_; \
  } while (0)

#define TPCOMM_CUDA_CHECK(call)                                          \
  do {                                                                   \
    cudaError_t tpcomm_err_ = (call);                                    \
    if (tpcomm_err_ != cudaSuccess)                                      \
      return ::tpcomm::failCuda(tpcomm_err_, #call, __FILE__, __LINE__); \
  } while (0)
