#include "kernels/occupancy.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "kernels/algo_launch.h"
#include "kernels/variant_table.h"

namespace tpcomm {

tpcommResult_t queryOccupancy(int device, int world, VariantOccupancy* out) {
  memset(out, 0, sizeof(*out));
  int sms = 0, major = 0;
  TPCOMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  TPCOMM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  out->sms = static_cast<uint16_t>(std::clamp(sms, 0, 65535));
  out->pdl = major >= 9 ? 1 : 0;
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
      }
      row[step] = static_cast<uint8_t>(std::clamp(least, 0, 255));
    }
  }
  return tpcommSuccess;
}

}  // namespace tpcomm
