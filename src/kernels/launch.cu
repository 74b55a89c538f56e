// The one place kernels are launched: picks the instantiation and launches it with
// cudaLaunchKernelEx, adding the programmatic-dependent-launch attribute where it is asked for.
#include <algorithm>
#include <cstdint>

#include "common/error.h"
#include "kernels/algo_launch.h"
#include "kernels/oneshot_layout.h"
#include "plan/policy.h"

namespace tpcomm {

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
size_t hostTwoShotChunkVecs(const DeviceComm& c) {
  return c.host_slot_bytes / kVecBytes / 2 / (2 * c.world) * c.world;
}

namespace {
// The one list of the algorithms tpcomm runs as its own kernels (everything but auto and NCCL).
struct AlgoKernels {
  int algo;
  KernelSet (*of)(int world);
};
constexpr AlgoKernels kAlgoKernels[] = {
    {tpcommAlgoOneShot, oneShotKernels},         {tpcommAlgoTwoShot, twoShotKernels},
    {tpcommAlgoHostOneShot, hostOneShotKernels}, {tpcommAlgoHostTwoShot, hostTwoShotKernels},
    {tpcommAlgoIsland, islandKernels},           {tpcommAlgoHostBulk, hostBulkKernels},
};
}  // namespace

bool isKernelAlgo(int algo) {
  for (const AlgoKernels& a : kAlgoKernels)
    if (a.algo == algo) return true;
  return false;
}

KernelSet kernelsOf(int algo, int world) {
  for (const AlgoKernels& a : kAlgoKernels)
    if (a.algo == algo) return a.of(world);
  return KernelSet{};
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

OneShotCall oneShotGeometry(const DeviceComm& c, const LaunchArgs& a) {
  // Vectors of a source's region of a slot (an outbox slot for host_bulk), as the kernels'
  // slotVecs<Proto> gives them: one 16-byte entry per vector over peer memory, two over LL.
  size_t full = 0;
  switch (a.algo) {
    case tpcommAlgoOneShot:
      full = oneShotStepBytes(c) / kVecBytes;
      break;
    case tpcommAlgoHostOneShot:
      full = (a.host_sentinel ? hostSentinelStepBytes(c) : hostOneShotStepBytes(c)) / kVecBytes;
      break;
    case tpcommAlgoHostBulk:
      full = hostBulkStepBytes(c) / kVecBytes;
      break;
    default:
      return OneShotCall{};
  }
  const size_t bytes = a.count * dtypeSize(a.dtype);
  const size_t nvec = (bytes + kVecBytes - 1) / kVecBytes;
  if (full == 0 || nvec == 0 || a.blocks < 1) return OneShotCall{};
  return oneShotCall(full, a.chunk_vecs, nvec, static_cast<unsigned>(a.blocks));
}

namespace {
// oneShotLeanFits for a call whose geometry (oneShotGeometry) is already known.
bool leanFits(const LaunchArgs& a, const OneShotCall& k, bool aligned) {
  const bool sentinel =
      a.algo == tpcommAlgoOneShot || (a.algo == tpcommAlgoHostOneShot && a.host_sentinel);
  if (!sentinel || !aligned || a.blocks < 1 || a.threads < 1) return false;
  const size_t bytes = a.count * dtypeSize(a.dtype);
  if (bytes == 0 || bytes % kVecBytes != 0) return false;
  // The geometry the kernels will run with: one step, and a vector per thread at most.
  return k.nsteps == 1 && k.per <= static_cast<size_t>(a.threads);
}
}  // namespace

bool oneShotLeanFits(const DeviceComm& c, const LaunchArgs& a, bool aligned) {
  return leanFits(a, oneShotGeometry(c, a), aligned);
}

tpcommResult_t launchAllReduceKernel(const DeviceComm& c, const LaunchArgs& a, cudaStream_t s) {
  const int di = dtypeIndex(a.dtype);
  if (di < 0) return fail(tpcommInternalError, "launch: datatype %d", static_cast<int>(a.dtype));
  const bool aligned = (reinterpret_cast<uintptr_t>(a.send) % kVecBytes) == 0 &&
                       (reinterpret_cast<uintptr_t>(a.recv) % kVecBytes) == 0;
  const bool host_sentinel = a.algo == tpcommAlgoHostOneShot && a.host_sentinel;
  const KernelSet set = host_sentinel ? hostSentinelKernels(c.world) : kernelsOf(a.algo, c.world);
  const OneShotCall geo = oneShotGeometry(c, a);  // all zero for the other algorithms
  const void* fn = a.lean && set.lean[di] && leanFits(a, geo, aligned) ? set.lean[di] : set.fn[di];
  if (!fn) return fail(tpcommInternalError, "launch: no kernel for algorithm %d", a.algo);
  if (host_sentinel && geo.nsteps != 1)
    return fail(tpcommInternalError, "launch: the host sentinel protocol takes one step, not %zu",
                geo.nsteps);
  if (a.algo == tpcommAlgoIsland && (c.island < 0 || c.island_size * 2 != c.world))
    return fail(tpcommInternalError, "launch: island algorithm without an island split");

  DeviceComm dc = c;
  dc.push_batch = a.push_batch;
  dc.aligned = aligned ? 1 : 0;
  dc.push_eighths = a.push_eighths;
  dc.call_region = geo.region;
  dc.call_nsteps = geo.nsteps;
  dc.call_per = geo.per;
  const void* send = a.send;
  void* recv = a.recv;
  size_t count = a.count;
  size_t chunk = a.chunk_vecs;
  void* args[] = {&dc, &send, &recv, &count, &chunk};

  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(a.blocks));
  cfg.blockDim = dim3(static_cast<unsigned>(a.threads));
  cfg.dynamicSmemBytes = 0;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  if (a.pdl) {
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  TPCOMM_CUDA_CHECK(cudaLaunchKernelExC(&cfg, fn, args));
  return tpcommSuccess;
}

}  // namespace tpcomm
