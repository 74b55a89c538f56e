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
#include "kernels/batch_device.cuh"
#include "kernels/epoch_device.cuh"

namespace tpcomm {
namespace {

template <typename T, bool kAligned, int kW>
__global__ void __launch_bounds__(kThreadsPerBlock)
    oneShotKernel(const __grid_constant__ DeviceComm c, const T* send, T* recv, size_t count) {
  pdlWait();
  constexpr int E = VecTraits<T>::kElems;
  const size_t nvec = (count + E - 1) / E;
  const size_t per_block = (nvec + gridDim.x - 1) / gridDim.x;
  const size_t begin = blockIdx.x * per_block;
  const size_t end = min(begin + per_block, nvec);
  const size_t stride = blockDim.x;
  const size_t v0 = begin + threadIdx.x;
  // The first batch is loaded before the epoch, so both are in flight together.
  uint4 x[kPushBatch];
  loadBatch<T, kAligned>(send, v0, stride, end, count, x);
  const unsigned long long epoch = readEpoch(c);
  if (epoch == ~0ull) return;  // communicator aborted by an earlier timeout

  const size_t region = c.slot_bytes / kVecBytes / c.world;  // vectors per source rank
  const size_t slot_off = (epoch % kNumSlots) * c.slot_bytes;
  uint4* mine = reinterpret_cast<uint4*>(c.bufs[c.rank] + slot_off);

  // 1. Push: my vectors into my region of every peer's slot.
  for (size_t v = v0; v < end; v += stride * kPushBatch) {
    if (v != v0) loadBatch<T, kAligned>(send, v, stride, end, count, x);
#pragma unroll
    for (int u = 0; u < kPushBatch; ++u) {
      const size_t vv = v + u * stride;
      if (vv >= end) continue;
      const uint4 y = canon<T>(x[u]);
      for (int p = 1; p < c.world; ++p) {
        const int peer = (c.rank + p) % c.world;
        storeVec16(reinterpret_cast<uint4*>(c.bufs[peer] + slot_off) + c.rank * region + vv, y);
      }
    }
  }
  const bool advance = arriveEpoch(c);
  pdlLaunchDependents();

  // 2. Reduce in rank order from my slot, write the output.
  WaitCtx ctx = makeWaitCtx(c);
  for (size_t v = v0; v < end; v += stride * kReduceBatch) {
    uint4 y[kReduceBatch];
    if (!reduceBatch<T, kAligned, kW>(c, mine, region, v, stride, end, send, v, count, epoch, ctx, y))
      return;  // timed out; no block-wide barrier follows, so returning alone is safe
#pragma unroll
    for (int u = 0; u < kReduceBatch; ++u)
      if (v + u * stride < end) storeVec<T, kAligned>(recv, v + u * stride, count, y[u]);
  }
  if (advance) advanceEpoch(c, epoch, 1);
}

template <int kW>
KernelSet kernelsFor() {
  return KernelSet{{reinterpret_cast<const void*>(&oneShotKernel<float, true, kW>),
                    reinterpret_cast<const void*>(&oneShotKernel<__half, true, kW>),
                    reinterpret_cast<const void*>(&oneShotKernel<__nv_bfloat16, true, kW>)},
                   {reinterpret_cast<const void*>(&oneShotKernel<float, false, kW>),
                    reinterpret_cast<const void*>(&oneShotKernel<__half, false, kW>),
                    reinterpret_cast<const void*>(&oneShotKernel<__nv_bfloat16, false, kW>)}};
}

}  // namespace

KernelSet oneShotKernels(int world) {
  return world <= 2 ? kernelsFor<2>() : world <= 4 ? kernelsFor<4>() : kernelsFor<8>();
}

size_t oneShotCapacityBytes(const DeviceComm& c) {
  return c.slot_bytes / kVecBytes / c.world * kVecBytes;
}

}  // namespace tpcomm
