#include "comm/checks/stream_device.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include "common/error.h"

namespace tpcomm {
namespace {

struct DriverCalls {
  PFN_cuStreamGetCtx_v12050 stream_ctx = nullptr;
  PFN_cuCtxGetDevice_v13000 ctx_device = nullptr;
};

// Resolved once; both exist in every driver the CUDA 13 runtime runs on (580 and newer).
const DriverCalls& driverCalls() {
  static const DriverCalls calls = [] {
    DriverCalls c;
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuStreamGetCtx", &fn, 12050, cudaEnableDefault, &q) ==
            cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      c.stream_ctx = reinterpret_cast<PFN_cuStreamGetCtx_v12050>(fn);
    fn = nullptr;
    if (cudaGetDriverEntryPointByVersion("cuCtxGetDevice", &fn, 13000, cudaEnableDefault, &q) ==
            cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      c.ctx_device = reinterpret_cast<PFN_cuCtxGetDevice_v13000>(fn);
    cudaGetLastError();
    return c;
  }();
  return calls;
}

}  // namespace

tpcommResult_t streamDevice(cudaStream_t s, int* device, const char* op) {
  const DriverCalls& d = driverCalls();
  if (!d.stream_ctx || !d.ctx_device)
    return fail(tpcommUnhandledCudaError,
                "%s: the driver offers no cuStreamGetCtx_v2 / cuCtxGetDevice_v2 (CUDA 13 drivers, "
                "580 or newer, do): cannot tell the stream's GPU",
                op);
  CUcontext ctx = nullptr;
  CUgreenCtx green = nullptr;  // a green context's stream reports its device's primary context
  CUresult r = d.stream_ctx(reinterpret_cast<CUstream>(s), &ctx, &green);
  CUdevice dev = -1;
  if (r == CUDA_SUCCESS) r = d.ctx_device(&dev, ctx);
  if (r != CUDA_SUCCESS)
    return fail(tpcommInvalidArgument,
                "%s: stream %p: the driver cannot tell its GPU (CUresult %d): not a live stream?",
                op, static_cast<void*>(s), static_cast<int>(r));
  *device = static_cast<int>(dev);
  return tpcommSuccess;
}

RelaxedCaptureMode::RelaxedCaptureMode(bool capturing) : on_(capturing) {
  if (on_ && cudaThreadExchangeStreamCaptureMode(&saved_) != cudaSuccess) {
    on_ = false;
    cudaGetLastError();
  }
}

RelaxedCaptureMode::~RelaxedCaptureMode() {
  if (on_) cudaThreadExchangeStreamCaptureMode(&saved_);
}

}  // namespace tpcomm
