// One-shot push all-reduce (latency path). Each rank writes its whole input into a region of every
// peer's current slot, then sums every rank's vector from its own memory in rank order. A peer's
// vector has arrived when none of its elements holds the sentinel: no flag, no barrier round trip.
// The reader puts the sentinel back right after reading, so a slot is clean whenever no call uses
// it; three slots rotated by step epoch keep a rank that runs ahead from writing into the slot its
// slower peer still reads (a peer can be at most one step ahead: docs/PROTOCOL.md).
//
// Pushing rather than pulling: PCIe and NVLink writes are posted, reads cost a round trip, and the
// user's buffers need no IPC registration (so CUDA graph capture needs no bookkeeping). This is
// the "Lamport" scheme of TensorRT-LLM's one-shot kernels, with an all-ones NaN as the sentinel so
// that -0.0 survives and one cleared state serves every datatype.
#include "kernels/algo_launch.h"
#include "kernels/epoch_device.cuh"
#include "kernels/vec_device.cuh"
#include "kernels/wait_device.cuh"

namespace tpcomm {
namespace {

template <typename T, bool kAligned>
__global__ void __launch_bounds__(kThreadsPerBlock)
    oneShotKernel(const __grid_constant__ DeviceComm c, const T* send, T* recv, size_t count) {
  pdlWait();
  constexpr int E = VecTraits<T>::kElems;
  const size_t nvec = (count + E - 1) / E;
  const size_t per_block = (nvec + gridDim.x - 1) / gridDim.x;
  const size_t begin = blockIdx.x * per_block;
  const size_t end = min(begin + per_block, nvec);
  // The thread's first vector is loaded before the epoch, so both loads are in flight together
  // (decode-sized messages have one vector per thread).
  const size_t v0 = begin + threadIdx.x;
  const uint4 x0 = v0 < end ? canon<T>(loadVec<T, kAligned>(send, v0, count)) : uint4{};
  const unsigned long long epoch = readEpoch(c);
  if (epoch == ~0ull) return;  // communicator aborted by an earlier timeout

  const size_t region = c.slot_bytes / kVecBytes / c.world;  // vectors per source rank
  const size_t slot_off = (epoch % kNumSlots) * c.slot_bytes;
  uint4* mine = reinterpret_cast<uint4*>(c.bufs[c.rank] + slot_off);

  // 1. Push: my vectors into my region of every peer's slot.
  for (size_t v = v0; v < end; v += blockDim.x) {
    const uint4 x = v == v0 ? x0 : canon<T>(loadVec<T, kAligned>(send, v, count));
    for (int p = 1; p < c.world; ++p) {
      const int peer = (c.rank + p) % c.world;
      uint4* dst = reinterpret_cast<uint4*>(c.bufs[peer] + slot_off) + c.rank * region + v;
      storeVec16(dst, x);
    }
  }
  endEpoch(c, epoch, 1);
  pdlLaunchDependents();

  // 2. Reduce: all loads of a vector issued before the first wait, summed in rank order.
  WaitCtx ctx = makeWaitCtx(c);
  for (size_t v = v0; v < end; v += blockDim.x) {
    uint4 x[kMaxRanks];
#pragma unroll
    for (int r = 0; r < kMaxRanks; ++r)
      if (r < c.world && r != c.rank) x[r] = loadVolatile(mine + r * region + v);
#pragma unroll
    for (int r = 0; r < kMaxRanks; ++r) {
      if (r >= c.world) break;
      if (r == c.rank) x[r] = v == v0 ? x0 : canon<T>(loadVec<T, kAligned>(send, v, count));
      else if (hasSentinel<T>(x[r])) x[r] = waitVec<T>(mine + r * region + v, ctx, c, r, epoch);
    }
    Acc<T> acc;
    acc.set(x[0]);
#pragma unroll
    for (int r = 1; r < kMaxRanks; ++r)
      if (r < c.world) acc.add(x[r]);
    if (ctx.failed) return;  // no block-wide barrier follows: returning alone is safe
    storeVec<T, kAligned>(recv, v, count, acc.result());
#pragma unroll
    for (int r = 0; r < kMaxRanks; ++r)
      if (r < c.world && r != c.rank) storeVec16(mine + r * region + v, sentinelVec());
  }
}

template <typename T, bool kAligned>
const void* kernelFor() {
  return reinterpret_cast<const void*>(&oneShotKernel<T, kAligned>);
}

}  // namespace

KernelSet oneShotKernels() {
  return KernelSet{{kernelFor<float, true>(), kernelFor<__half, true>(),
                    kernelFor<__nv_bfloat16, true>()},
                   {kernelFor<float, false>(), kernelFor<__half, false>(),
                    kernelFor<__nv_bfloat16, false>()}};
}

size_t oneShotCapacityBytes(const DeviceComm& c) {
  return c.slot_bytes / kVecBytes / c.world * kVecBytes;
}

}  // namespace tpcomm
