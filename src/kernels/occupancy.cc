#include "kernels/occupancy.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "common/log.h"
#include "kernels/algo_launch.h"
#include "kernels/variant_table.h"

namespace tpcomm {
namespace {

// cudaOccupancyMaxActiveClusters of `fn` at `threads` in clusters of kMaxClusterBlocks; false
// (the error cleared) where the runtime cannot say.
bool maxActiveClusters(const void* fn, int threads, int* out) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(kMaxClusterBlocks);
  cfg.blockDim = dim3(static_cast<unsigned>(threads));
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = kMaxClusterBlocks;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  if (cudaOccupancyMaxActiveClusters(out, fn, &cfg) == cudaSuccess) return true;
  cudaGetLastError();
  return false;
}

}  // namespace

int clusterBlocksPerSm(int max_clusters, int sms) {
  if (max_clusters <= 0 || sms <= 0) return 0;
  return max_clusters * kMaxClusterBlocks / sms;
}

tpcommResult_t queryOccupancy(int device, int world, VariantOccupancy* out) {
  memset(out, 0, sizeof(*out));
  int sms = 0, major = 0;
  TPCOMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  TPCOMM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  out->sms = static_cast<uint16_t>(std::clamp(sms, 0, 65535));
  out->pdl = major >= 9 ? 1 : 0;
  out->clusters = major >= 9 ? 1 : 0;
  int rows = 0;
  const VariantKernels* table = variantTable(&rows);
  for (int r = 0; r < rows; ++r) {
    uint8_t* row = out->blocks_per_sm[table[r].variant];
    for (int step = 0; step < kThreadSteps; ++step) {
      int least = -1;
      for (int d = 0; d < kNumDtypes; ++d) {
        const void* fn = variantKernel(table[r].variant, world, d);
        if (!fn) continue;
        int n = 0;
        // No dynamic shared memory: every kernel's shared memory is static (launchKernel).
        TPCOMM_CUDA_CHECK(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, 32 * (step + 1), 0));
        least = least < 0 ? n : std::min(least, n);
        // A fused row's one-pass kernel runs under the same cap as its general one.
        if (const void* ofn = variantOnePassKernel(table[r].variant, world, d)) {
          TPCOMM_CUDA_CHECK(
              cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, ofn, 32 * (step + 1), 0));
          least = std::min(least, n);
        }
        const void* cfn =
            out->clusters ? variantClusterKernel(table[r].variant, world, d) : nullptr;
        if (!cfn) continue;
        int clusters = 0;
        if (!maxActiveClusters(cfn, 32 * (step + 1), &clusters)) {
          // Said, not hidden: the fused calls then keep a block per row on this communicator.
          TPCOMM_WARN(INIT,
                      "GPU %d: the cluster occupancy query failed for %s at %d threads: fused "
                      "calls keep one block per row",
                      device, tpcommVariantName(table[r].variant), 32 * (step + 1));
          out->clusters = 0;
          continue;
        }
        // Below one block per SM on average (8-block clusters of many threads), the figure says
        // only that such a cluster cannot be on every SM: folding its 0 in would cap every grid
        // of the variant at one block, the block-per-row kernel's and smaller clusters' included.
        if (const int cb = clusterBlocksPerSm(clusters, sms); cb > 0) least = std::min(least, cb);
      }
      row[step] = static_cast<uint8_t>(std::clamp(least, 0, 255));
    }
  }
  return tpcommSuccess;
}

}  // namespace tpcomm
