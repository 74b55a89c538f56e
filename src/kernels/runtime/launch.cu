// The one place kernels are launched: looks the planned variant's kernel up in the variant table
// and launches it with cudaLaunchKernelEx, with the programmatic-dependent-launch attribute where
// the plan asks for it. Decides nothing: every choice is in the plan (src/plan/planner.cc).
#include <algorithm>
#include <cstdint>

#include "common/error.h"
#include "kernels/layout/island_world.h"
#include "kernels/layout/oneshot_layout.h"
#include "kernels/layout/pull_ll_layout.h"
#include "kernels/runtime/algo_launch.h"
#include "kernels/runtime/variant_table.h"

namespace tpcomm {

namespace {

// Slot geometry, mirrored from the kernels (proto_device.cuh): a vector takes 1 entry of 16
// bytes over peer memory, 2 over host memory (LL: a flag with every 4 data bytes).
size_t oneShotStepBytes(const DeviceComm& c) {
  return c.slot_bytes / kVecBytes / c.world * kVecBytes;
}
size_t hostOneShotStepBytes(const DeviceComm& c) {
  return c.host_slot_bytes / kVecBytes / 2 / c.world * kVecBytes;
}
// Bulk: a step is one outbox slot (each rank writes only its own data there).
size_t hostBulkStepBytes(const DeviceComm& c) {
  return c.out_slot_bytes / kVecBytes * kVecBytes;
}
size_t hostSentinelStepBytes(const DeviceComm& c) {
  return c.hs_slot_bytes / kVecBytes / c.world * kVecBytes;
}
size_t twoShotChunkVecs(const DeviceComm& c) {
  return c.slot_bytes / kVecBytes / (2 * c.world) * c.world;
}
// Island: a slot holds 2m + 2 areas of seg_cap entries (island.cu), a step m segments.
size_t islandChunkVecs(const DeviceComm& c) {
  if (!islandWorld(c.world)) return 0;
  const size_t m = static_cast<size_t>(c.world / 2);
  return c.slot_bytes / kVecBytes / (2 * m + 2) * m;
}
// Pull: a one-shot step is one outbox slot (each rank writes only its own data there); a two-shot
// slot of `slot_bytes` holds the rank's whole chunk (world segments) and its reduced segment
// (twoshot_pull.cu), in peer memory (a pull outbox) and in host memory (a host_bulk outbox) alike.
size_t pullOneShotStepBytes(const DeviceComm& c) {
  return pullSlotBytes(c.slot_bytes) / kVecBytes * kVecBytes;
}
size_t pullTwoShotChunkVecs(size_t slot_bytes, int world) {
  return slot_bytes / kVecBytes / (world + 1) * world;
}
// Island over pull: an outbox slot holds m + 3 areas of seg_cap entries (island_pull.cu), a step
// m segments.
size_t islandPullChunkVecs(const DeviceComm& c) {
  if (!islandWorld(c.world)) return 0;
  const size_t m = static_cast<size_t>(c.world / 2);
  return pullSlotBytes(c.slot_bytes) / kVecBytes / (m + 3) * m;
}
size_t hostTwoShotChunkVecs(const DeviceComm& c) {
  return c.host_slot_bytes / kVecBytes / 2 / (2 * c.world) * c.world;
}

}  // namespace

SlotCapacity slotCapacity(const DeviceComm& c) {
  SlotCapacity s;
  s.oneshot_step_bytes = oneShotStepBytes(c);
  s.twoshot_chunk_vecs = twoShotChunkVecs(c);
  s.island_chunk_vecs = islandChunkVecs(c);
  s.host_step_bytes = hostOneShotStepBytes(c);
  s.host_sentinel_step_bytes = hostSentinelStepBytes(c);
  s.host_chunk_vecs = hostTwoShotChunkVecs(c);
  s.bulk_step_bytes = hostBulkStepBytes(c);
  s.host_pull_chunk_vecs = pullTwoShotChunkVecs(hostBulkStepBytes(c), c.world);
  s.pull_step_bytes = pullOneShotStepBytes(c);
  s.pull_chunk_vecs = pullTwoShotChunkVecs(pullSlotBytes(c.slot_bytes), c.world);
  s.pull_ll_step_bytes = kPullLLMaxCallBytes;  // the LL area's slots have a fixed size
  s.island_pull_chunk_vecs = islandPullChunkVecs(c);
  // The CE landing slots have the peer slots' size and layout (kernels/layout/ce_layout.h).
  s.ce_step_bytes = c.ce[c.rank] ? oneShotStepBytes(c) : 0;
  return s;
}

int dtypeIndex(tpcommDataType_t dt) {
  switch (dt) {
    case tpcommFloat32:
      return 0;
    case tpcommFloat16:
      return 1;
    case tpcommBfloat16:
      return 2;
  }
  return -1;
}

size_t dtypeSize(tpcommDataType_t dt) {
  return dt == tpcommFloat32 ? 4 : 2;
}

LaunchParams launchParamsOf(const LaunchArgs& a) {
  LaunchParams l = {};
  l.call_region = a.geometry.region;
  l.call_nsteps = a.geometry.nsteps;
  l.call_per = a.geometry.per;
  l.push_batch = a.push_batch;
  l.push_eighths = a.push_eighths;
  l.aligned = a.aligned ? 1 : 0;
  return l;
}

tpcommResult_t launchAllReduceKernel(const DeviceComm& c, const LaunchArgs& a, cudaStream_t s) {
  const int di = dtypeIndex(a.dtype);
  if (di < 0) return fail(tpcommInternalError, "launch: datatype %d", static_cast<int>(a.dtype));
  const void* fn = variantKernel(a.variant, c.world, di);
  const VariantRow* row = variantRow(a.variant);  // non-null where variantKernel found a kernel
  if (!fn)
    return fail(tpcommInternalError, "launch: no kernel for variant %s at world %d",
                row ? row->name : "?", c.world);
  if (row->island && (c.island < 0 || c.island_size * 2 != c.world))
    return fail(tpcommInternalError, "launch: island algorithm without an island split");

  LaunchParams l = launchParamsOf(a);
  const void* send = a.send;
  void* recv = a.recv;
  size_t count = a.count;
  size_t chunk = a.chunk_vecs;
  void* args[] = {const_cast<DeviceComm*>(&c), &l, &send, &recv, &count, &chunk};
  // The threads as planned (CallPlan::threads: the lean kernels' checker warp included).
  return launchKernel(fn, a.blocks, a.threads, a.pdl, args, s);
}

tpcommResult_t launchKernel(const void* fn, int blocks, int threads, bool pdl, void** args,
                            cudaStream_t s, int cluster) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(blocks));
  cfg.blockDim = dim3(static_cast<unsigned>(threads));
  cfg.dynamicSmemBytes = 0;
  cfg.stream = s;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (pdl) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = static_cast<unsigned>(cluster);
    attr[n].val.clusterDim.y = 1;
    attr[n++].val.clusterDim.z = 1;
  }
  cfg.attrs = n > 0 ? attr : nullptr;
  cfg.numAttrs = n;
  TPCOMM_CUDA_CHECK(cudaLaunchKernelExC(&cfg, fn, args));
  return tpcommSuccess;
}

}  // namespace tpcomm
