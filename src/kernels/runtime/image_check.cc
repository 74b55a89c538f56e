#include "kernels/runtime/image_check.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "kernels/runtime/algo_launch.h"
#include "kernels/runtime/fabric_probe_kernels.h"
#include "kernels/runtime/variant_table.h"

namespace tpcomm {

const char* builtArchitectures() {
  return TPCOMM_BUILD_ARCHS;
}

bool ranFromPtxJit(const cudaFuncAttributes& attr) {
  return attr.ptxVersion > 0 && attr.binaryVersion > attr.ptxVersion;
}

std::string ptxJitMessage(int device, int major, int minor, const char* built) {
  std::string archs = built;
  for (char& ch : archs)
    if (ch == ',') ch = ';';
  const std::string cc = std::to_string(major) + "." + std::to_string(minor);
  const std::string want = std::to_string(major) + std::to_string(minor) + "-real";
  return "GPU " + std::to_string(device) + " (compute capability " + cc +
         ") runs tpcomm's kernels only through PTX JIT: this build (CUDA architectures \"" + built +
         "\") has no SASS for it, so the driver compiles the PTX at the first launch and " +
         "the kernels get no code specific to this GPU. Rebuild with -DTPCOMM_CUDA_ARCHS=\"" +
         (archs.empty() ? want : archs + ";" + want) + "\" for native kernels (docs/ARCH.md); " +
         "`tpcomm inspect --cc " + cc + " libtpcomm.so` shows what a build carries";
}

bool firstPtxJitWarning() {
  static std::atomic<bool> said{false};
  return !said.exchange(true);
}

std::vector<const void*> checkedKernels() {
  // Every row of the variant table (the kernels the launch can pick, a row's cluster and one-pass
  // kernels too) at every world-size class; the island kernels exist from world 4 on.
  std::vector<const void*> out;
  int rows = 0;
  const VariantRow* table = variantRows(&rows);
  for (int r = 0; r < rows; ++r)
    for (int w : kWorldClasses)
      for (int d = 0; d < kNumDtypes; ++d)
        for (const void* fn :
             {variantKernel(table[r].id, w, d), variantClusterKernel(table[r].id, w, d),
              variantOnePassKernel(table[r].id, w, d)})
          if (fn) out.push_back(fn);
  for (const void* fn : topo::probeKernels()) out.push_back(fn);  // doctor's and init's probe
  return out;
}

tpcommResult_t checkKernelImages(int device, bool* ptx_jit) {
  if (ptx_jit) *ptx_jit = false;
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
    jit |= ranFromPtxJit(attr);
  }
  if (ptx_jit) *ptx_jit = jit;
  if (jit && firstPtxJitWarning())
    TPCOMM_WARN(INIT, "%s", ptxJitMessage(device, major, minor, builtArchitectures()).c_str());
  return tpcommSuccess;
}

}  // namespace tpcomm
