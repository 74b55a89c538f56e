#include "comm/ce_copies.h"

#include <algorithm>

#include "common/error.h"
#include "kernels/ce_layout.h"
#include "kernels/variant_table.h"

namespace tpcomm {
namespace {

// The guard needs a thread per rank: one warp.
constexpr int kGuardThreads = 32;
static_assert(kMaxRanks <= kGuardThreads, "the guard waits for each peer in a thread of its own");

tpcommResult_t copy(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  // cudaMemcpyDefault: peer pointers (IPC-mapped or another device's) are told apart by UVA.
  TPCOMM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  return tpcommSuccess;
}

}  // namespace

tpcommResult_t launchOneShotCe(const DeviceComm& c, const LaunchArgs& a, uint64_t* steps,
                               cudaStream_t s) {
  const int di = dtypeIndex(a.dtype);
  const void* fn = di < 0 ? nullptr : variantKernel(tpcommVariantP2pOneShotCe, c.world, di);
  if (!fn) return fail(tpcommInternalError, "oneshot_ce: no kernel for world %d", c.world);
  for (int p = 0; p < c.world; ++p)
    if (!c.ce[p])
      return fail(tpcommInternalError, "oneshot_ce: rank %d has no copy-engine landing slots", p);
  const size_t esize = dtypeSize(a.dtype);
  const size_t region_bytes = a.geometry.region * kVecBytes;
  const size_t region_elems = region_bytes / esize;
  if (region_elems == 0 || a.geometry.nsteps * region_elems < a.count)
    return fail(tpcommInternalError, "oneshot_ce: %zu elements in %zu steps of %zu", a.count,
                a.geometry.nsteps, region_elems);

  DeviceComm dc = c;
  dc.aligned = a.aligned ? 1 : 0;
  dc.call_region = a.geometry.region;
  dc.call_nsteps = 1;  // every step is a kernel of its own
  char* flag_src = reinterpret_cast<char*>(&ceControl(c.ce[c.rank])->flag_src);
  for (size_t j = 0; j < a.geometry.nsteps; ++j) {
    const size_t first = j * region_elems;
    size_t n = std::min(region_elems, a.count - first);
    const char* send = static_cast<const char*>(a.send) + first * esize;
    char* recv = static_cast<char*>(a.recv) + first * esize;
    const int slot = static_cast<int>((*steps)++ % kNumSlots);
    size_t op = static_cast<size_t>(slot) | kCeGuardOp;
    void* args[] = {&dc, &send, &recv, &n, &op};
    TPCOMM_CHECK(launchKernel(fn, 1, kGuardThreads, a.pdl, args, s));
    // Every data copy before any flag copy: a flag is copied only once all the data has been.
    for (int p = 1; p < c.world; ++p) {
      const int q = (c.rank + p) % c.world;
      TPCOMM_CHECK(
          copy(ceLanding(c.ce[q], c.slot_bytes, slot, c.rank, region_bytes), send, n * esize, s));
    }
    for (int p = 1; p < c.world; ++p) {
      const int q = (c.rank + p) % c.world;
      TPCOMM_CHECK(
          copy(&ceControl(c.ce[q])->flag[slot][c.rank], flag_src, sizeof(unsigned long long), s));
    }
    op = static_cast<size_t>(slot);
    // No programmatic dependent launch: the previous operation is a copy.
    TPCOMM_CHECK(launchKernel(fn, a.blocks, a.threads, false, args, s));
  }
  return tpcommSuccess;
}

}  // namespace tpcomm
