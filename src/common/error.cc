#include "common/error.h"

#include <cstdarg>
#include <cstdio>
#include <string>

#include "common/driver_floor.h"
#include "common/log.h"
#include "common/result_table.h"

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
  std::string hint;
  if (err == cudaErrorNoDevice) hint = " (no CUDA device is visible: check CUDA_VISIBLE_DEVICES)";
  if (err == cudaErrorInsufficientDriver) {
    int driver = 0, runtime = 0;  // both answer without a driver (0 and the linked runtime)
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    hint = " (no usable NVIDIA driver: " + insufficientDriverHint(driver, runtime) + ")";
  }
  return fail(r, "%s failed: %s (%s)%s at %s:%d", what, cudaGetErrorString(err),
              cudaGetErrorName(err), hint.c_str(), file, line);
}

void clearLastError() {
  t_last_error.clear();
}
const char* lastError() {
  return t_last_error.c_str();
}
void setLastError(const std::string& msg) {
  t_last_error = msg;
}

namespace {

#define TPCOMM_RESULT_ROW(code, description) {code, #code, description},
constexpr ResultInfo kResults[] = {TPCOMM_RESULT_TABLE(TPCOMM_RESULT_ROW)};
#undef TPCOMM_RESULT_ROW

constexpr bool inEnumOrder() {
  for (int i = 0; i < tpcommNumResults; ++i)
    if (kResults[i].code != i) return false;
  return true;
}
static_assert(sizeof(kResults) / sizeof(kResults[0]) == tpcommNumResults,
              "TPCOMM_RESULT_TABLE needs one row per tpcommResult_t");
static_assert(inEnumOrder(), "TPCOMM_RESULT_TABLE rows must follow the enum's order");

}  // namespace

const ResultInfo* resultInfo(int r) {
  return r >= 0 && r < tpcommNumResults ? &kResults[r] : nullptr;
}

const char* resultName(tpcommResult_t r) {
  const ResultInfo* info = resultInfo(r);
  return info ? info->name : "tpcommUnknownResult";
}

}  // namespace tpcomm
