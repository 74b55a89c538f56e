#include "kernels/image_check.h"

#include <cuda_runtime_api.h>

#include <mutex>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "kernels/algo_launch.h"
#include "kernels/variant_table.h"

namespace tpcomm {

const char* builtArchitectures() {
  return TPCOMM_BUILD_ARCHS;
}

std::vector<const void*> checkedKernels() {
  // Every row of the variant table (the kernels the launch can pick) at every world-size class;
  // the island kernels exist from world 4 on.
  std::vector<const void*> out;
  int rows = 0;
  const VariantKernels* table = variantTable(&rows);
  for (int r = 0; r < rows; ++r)
    for (int w : kWorldClasses)
      for (int d = 0; d < kNumDtypes; ++d)
        if (const void* fn = variantKernel(table[r].variant, w, d)) out.push_back(fn);
  return out;
}

tpcommResult_t checkKernelImages(int device) {
  TPCOMM_CUDA_CHECK(cudaSetDevice(device));
  int major = 0, minor = 0;
  TPCOMM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  TPCOMM_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  bool jit = false;
  for (const void* fn : checkedKernels()) {
    cudaFuncAttributes attr{};
    const cudaError_t err = cudaFuncGetAttributes(&attr, fn);
    if (err == cudaErrorNoKernelImageForDevice || err == cudaErrorInvalidDeviceFunction) {
      cudaGetLastError();
      char bus[32] = "?";
      cudaDeviceGetPCIBusId(bus, sizeof(bus), device);
      cudaGetLastError();
      return fail(tpcommNoKernelImage,
                  "GPU %d (%s, compute capability %d.%d) has no tpcomm kernel image: this "
                  "library was built for CUDA architectures \"%s\". Rebuild with "
                  "-DTPCOMM_CUDA_ARCHS=\"%d%d-real;<others>\" (or the default fat build), and "
                  "check a binary with `tpcomm inspect --cc %d.%d FILE`",
                  device, bus, major, minor, builtArchitectures(), major, minor, major, minor);
    }
    TPCOMM_CUDA_CHECK(err);
    if (attr.ptxVersion > 0 && attr.binaryVersion > attr.ptxVersion) jit = true;
  }
  if (jit) {
    static std::once_flag once;
    std::call_once(once, [&] {
      TPCOMM_INFO(INIT,
                  "GPU %d (cc %d.%d) runs tpcomm kernels through PTX JIT (no native SASS in "
                  "\"%s\"): slower first launch and no arch-specific code",
                  device, major, minor, builtArchitectures());
    });
  }
  return tpcommSuccess;
}

}  // namespace tpcomm
