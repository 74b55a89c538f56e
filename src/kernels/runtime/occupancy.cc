#include "kernels/runtime/occupancy.h"

#include <cuda_runtime_api.h>

#include <cstring>

#include "common/error.h"
#include "common/log.h"
#include "kernels/runtime/algo_launch.h"
#include "kernels/runtime/variant_table.h"

namespace tpcomm {
namespace {

// Whether the runtime answers cudaOccupancyMaxActiveClusters for `fn` in clusters of
// kMaxClusterBlocks with at least one cluster (the error cleared where it cannot say).
bool clustersLaunch(const void* fn) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(kMaxClusterBlocks);
  cfg.blockDim = dim3(static_cast<unsigned>(kThreadsPerBlock));
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = kMaxClusterBlocks;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, fn, &cfg) == cudaSuccess) return clusters > 0;
  cudaGetLastError();
  return false;
}

}  // namespace

tpcommResult_t queryOccupancy(int device, int world, GpuOccupancy* out) {
  memset(out, 0, sizeof(*out));
  int sms = 0, major = 0;
  TPCOMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  TPCOMM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  out->sms = static_cast<uint16_t>(sms < 0 ? 0 : sms > 65535 ? 65535 : sms);
  out->pdl = major >= 9 ? 1 : 0;
  if (major < 9) return tpcommSuccess;
  // Every cluster kernel of the variant table (the fused one-shot's, the epilogue's) must launch.
  int rows = 0;
  const VariantRow* all = variantRows(&rows);
  for (int v = 0; v < rows; ++v)
    for (int d = 0; d < kNumDtypes; ++d) {
      const void* fn = variantClusterKernel(all[v].id, world, d);
      if (!fn) continue;
      if (!clustersLaunch(fn)) {
        // Said, not hidden: the fused calls then keep a block per row on this communicator.
        TPCOMM_WARN(INIT,
                    "GPU %d: the cluster occupancy query failed (%s): fused calls keep one block "
                    "per row",
                    device, all[v].name);
        out->clusters = 0;
        return tpcommSuccess;
      }
      out->clusters = 1;
    }
  return tpcommSuccess;
}

}  // namespace tpcomm
