#include "kernels/image_check.h"

#include <cuda_runtime_api.h>

#include <mutex>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "kernels/algo_launch.h"

namespace tpcomm {

const char* builtArchitectures() {
  return TPCOMM_BUILD_ARCHS;
}

std::vector<const void*> checkedKernels() {
  std::vector<const void*> out;
  // Every kernel algorithm at every world-size class (the island kernels exist from world 4 on:
  // island sizes 2 and 4; at world 2 their set is empty).
  for (int w : kWorldClasses)
    for (int algo = 0; algo < tpcommNumAlgos; ++algo) {
      if (!isKernelAlgo(algo)) continue;
      const KernelSet set = kernelsOf(algo, w);
      for (const void* const* fns : {set.fn, set.lean})
        for (int d = 0; d < kNumDtypes; ++d)
          if (fns[d]) out.push_back(fns[d]);
    }
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
