// The bench tools' check of a CUDA runtime call: on failure, prints the tool's name, the call, the
// error and where, and exits 1 (a measurement tool has nothing to recover). Each tool names
// itself: `#define CK(call) TPCOMM_TOOL_CHECK("tpcomm-floor", call)`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

#define TPCOMM_TOOL_CHECK(tool, call)                                                     \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      fprintf(stderr, "%s: %s failed: %s (%s:%d)\n", tool, #call, cudaGetErrorString(e_), \
              __FILE__, __LINE__);                                                        \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)
