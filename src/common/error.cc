#include "common/error.h"

#include <cstdarg>
#include <cstdio>

#include "common/log.h"

namespace tpcomm {
namespace {
thread_local std::string t_last_error;
}

tpcommResult_t fail(tpcommResult_t result, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  t_last_error = std::string(resultName(result)) + ": " + buf;
  TPCOMM_WARN(INIT, "%s", t_last_error.c_str());
  return result;
}

tpcommResult_t failCuda(cudaError_t err, const char* what, const char* file, int line) {
  cudaGetLastError();  // clear the sticky-free error state so later calls are not confused
  const tpcommResult_t r = (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver)
                               ? tpcommNoDevice
                           : (err == cudaErrorNoKernelImageForDevice) ? tpcommNoKernelImage
                                                                      : tpcommUnhandledCudaError;
  const char* hint = "";
  if (err == cudaErrorNoDevice) hint = " (no CUDA device is visible: check CUDA_VISIBLE_DEVICES)";
  if (err == cudaErrorInsufficientDriver)
    hint = " (no usable NVIDIA driver: libcuda.so is missing or older than this CUDA runtime)";
  return fail(r, "%s failed: %s (%s)%s at %s:%d", what, cudaGetErrorString(err),
              cudaGetErrorName(err), hint, file, line);
}

void clearLastError() {
  t_last_error.clear();
}
const char* lastError() {
  return t_last_error.c_str();
}

const char* resultName(tpcommResult_t r) {
  switch (r) {
    case tpcommSuccess:
      return "tpcommSuccess";
    case tpcommUnhandledCudaError:
      return "tpcommUnhandledCudaError";
    case tpcommSystemError:
      return "tpcommSystemError";
    case tpcommInternalError:
      return "tpcommInternalError";
    case tpcommInvalidArgument:
      return "tpcommInvalidArgument";
    case tpcommInvalidUsage:
      return "tpcommInvalidUsage";
    case tpcommRemoteError:
      return "tpcommRemoteError";
    case tpcommInProgress:
      return "tpcommInProgress";
    case tpcommTimeout:
      return "tpcommTimeout";
    case tpcommNoDevice:
      return "tpcommNoDevice";
    case tpcommNoKernelImage:
      return "tpcommNoKernelImage";
    case tpcommUnsupported:
      return "tpcommUnsupported";
    case tpcommFallbackRefused:
      return "tpcommFallbackRefused";
    case tpcommNcclError:
      return "tpcommNcclError";
    default:
      return "tpcommUnknownResult";
  }
}

}  // namespace tpcomm
