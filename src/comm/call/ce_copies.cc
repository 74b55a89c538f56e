#include "comm/call/ce_copies.h"

#include <algorithm>

#include "comm/call/ce_steps.h"
#include "common/error.h"
#include "kernels/layout/ce_layout.h"
#include "kernels/runtime/variant_table.h"

namespace tpcomm {
namespace {

tpcommResult_t copy(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  // cudaMemcpyDefault: peer pointers (IPC-mapped or another device's) are told apart by UVA.
  TPCOMM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  return tpcommSuccess;
}

}  // namespace

tpcommResult_t launchOneShotCe(const DeviceComm& c, const LaunchArgs& a, uint64_t* steps,
                               cudaStream_t s) {
  const int di = dtypeIndex(a.dtype);
  const void* fn = di < 0 ? nullptr : variantKernel(a.variant, c.world, di);
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

  LaunchParams l = launchParamsOf(a);
  l.call_nsteps = 1;  // every step is a kernel of its own
  char* flag_src = reinterpret_cast<char*>(&ceControl(c.ce[c.rank])->flag_src);
  for (size_t j = 0; j < a.geometry.nsteps; ++j) {
    const size_t first = j * region_elems;
    size_t n = std::min(region_elems, a.count - first);
    const char* send = static_cast<const char*>(a.send) + first * esize;
    char* recv = static_cast<char*>(a.recv) + first * esize;
    const int slot = static_cast<int>((*steps)++ % kNumSlots);
    const CeStep step = ceStep(c.world, c.rank, slot, a.blocks, a.threads, a.pdl);
    for (int i = 0; i < step.n; ++i) {
      const CeOp& op = step.ops[i];
      switch (op.kind) {
        case CeOpKind::kDataCopy:
          TPCOMM_CHECK(copy(ceLanding(c.ce[op.peer], c.slot_bytes, slot, c.rank, region_bytes),
                            send, n * esize, s));
          break;
        case CeOpKind::kFlagCopy:
          TPCOMM_CHECK(copy(&ceControl(c.ce[op.peer])->flag[slot][c.rank], flag_src,
                            sizeof(unsigned long long), s));
          break;
        case CeOpKind::kGuard:
        case CeOpKind::kWait:
        case CeOpKind::kReduce: {
          size_t operand = op.operand;
          void* args[] = {const_cast<DeviceComm*>(&c), &l, &send, &recv, &n, &operand};
          TPCOMM_CHECK(launchKernel(fn, op.blocks, op.threads, op.pdl, args, s));
        }
      }
    }
  }
  return tpcommSuccess;
}

}  // namespace tpcomm
