// The GPU a stream belongs to, also while the stream captures a graph: cudaStreamGetDevice is
// refused during capture on the CUDA 13.0 runtime with driver 580
// (cudaErrorStreamCaptureUnsupported, and the refusal invalidates the capture), so it is asked of
// the driver instead: the stream's context (cuStreamGetCtx_v2) and that context's device
// (cuCtxGetDevice_v2), neither of which is a stream operation. The entry points come from the
// runtime (cudaGetDriverEntryPointByVersion), so nothing links libcuda.
#pragma once

#include <cuda_runtime_api.h>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

// *device: the ordinal of the stream's GPU (driver and runtime number devices alike). s must not
// be one of the default-stream handles (those follow the thread's current device).
tpcommResult_t streamDevice(cudaStream_t s, int* device, const char* op);

// While capturing, the thread's capture mode is relaxed for the guard's life, so a query (pointer
// attributes, a stream's context) cannot invalidate the caller's capture in global mode.
class RelaxedCaptureMode {
 public:
  explicit RelaxedCaptureMode(bool capturing);
  ~RelaxedCaptureMode();
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  bool on_;
  cudaStreamCaptureMode saved_ = cudaStreamCaptureModeRelaxed;
};

}  // namespace tpcomm
