// Two-shot push all-reduce (bandwidth path): reduce-scatter then all-gather, chunked through the
// staging slots so the message size is not capped by the buffer. Each chunk is one step (one slot):
//   1. every rank pushes segment d of the chunk into rank d's RS area;
//   2. rank d sums its segment in rank order, writes it to its output and pushes the sum into
//      every peer's AG area;
//   3. every rank copies the other segments from its AG area to its output.
// Block b of every rank owns the same sub-range of every segment, so the three phases of a block
// need no grid-wide barrier, and the thread that reads an input vector is the one that later
// writes that output vector (in-place calls are safe). Arrival is signalled by the data itself,
// as in the one-shot kernel (sentinel, cleared by the reader, slots rotated by step epoch).
#include "kernels/algo_launch.h"
#include "kernels/batch_device.cuh"
#include "kernels/epoch_device.cuh"

namespace tpcomm {
namespace {

__device__ __forceinline__ size_t segLen(size_t seg, size_t len, int d) {
  const size_t first = static_cast<size_t>(d) * seg;
  return first >= len ? 0 : min(seg, len - first);
}

template <typename T, bool kAligned, int kW>
__global__ void __launch_bounds__(kThreadsPerBlock)
    twoShotKernel(const __grid_constant__ DeviceComm c, const T* send, T* recv, size_t count,
                  size_t chunk_vecs) {
  pdlWait();
  constexpr int E = VecTraits<T>::kElems;
  const size_t nvec = (count + E - 1) / E;
  const size_t nsteps = (nvec + chunk_vecs - 1) / chunk_vecs;
  const unsigned long long epoch0 = readEpoch(c);
  if (epoch0 == ~0ull) return;  // communicator aborted by an earlier timeout
  const bool advance = arriveEpoch(c);

  const size_t seg_cap = c.slot_bytes / kVecBytes / (2 * c.world);  // vectors per area entry
  const size_t stride = blockDim.x;
  WaitCtx ctx = makeWaitCtx(c);
  for (size_t step = 0; step < nsteps; ++step) {
    const unsigned long long e = epoch0 + step;
    const size_t slot_off = (e % kNumSlots) * c.slot_bytes;
    const size_t base = step * chunk_vecs;  // first vector of the chunk
    const size_t len = min(chunk_vecs, nvec - base);
    const size_t seg = (len + c.world - 1) / c.world;
    const size_t per = (seg + gridDim.x - 1) / gridDim.x;
    const size_t o0 = blockIdx.x * per + threadIdx.x;  // this thread's first offset in a segment
    const size_t o1 = min(blockIdx.x * per + per, seg);
    uint4* mine = reinterpret_cast<uint4*>(c.bufs[c.rank] + slot_off);
    uint4* my_rs = mine;                      // [source rank][seg_cap]
    uint4* my_ag = mine + c.world * seg_cap;  // [owner rank][seg_cap]

    // 1. Reduce-scatter push: segment d of my input to rank d.
    for (int p = 1; p < c.world; ++p) {
      const int d = (c.rank + p) % c.world;
      const size_t end = min(o1, segLen(seg, len, d));
      uint4* dst = reinterpret_cast<uint4*>(c.bufs[d] + slot_off) + c.rank * seg_cap;
      const size_t first = base + d * seg;  // vector index of segment d's start
      for (size_t o = o0; o < end; o += stride * c.push_batch) {
        uint4 x[kPushBatch];
        loadBatch<T, kAligned>(send, first + o, stride, first + end, count, c.push_batch, x);
#pragma unroll
        for (int u = 0; u < kPushBatch; ++u)
          if (u < c.push_batch && o + u * stride < end)
            storeVec16(dst + o + u * stride, canon<T>(x[u]));
      }
    }

    // 2. Reduce my segment in rank order; write it out and push it to every peer's AG area.
    const size_t own_end = min(o1, segLen(seg, len, c.rank));
    const size_t own_first = base + c.rank * seg;  // vector index of my segment's start
    // With 8 ranks' vectors per batch entry, a batch of one keeps the kernel within registers.
    constexpr int R = kW <= 4 ? kReduceBatch : 1;
    for (size_t o = o0; o < own_end; o += stride * R) {
      uint4 y[R];
      if (!reduceBatch<T, kAligned, kW>(c, my_rs, seg_cap, o, stride, own_end, send, own_first + o,
                                    count, e, ctx, y))
        return;  // timed out; no block-wide barrier follows
#pragma unroll
      for (int u = 0; u < R; ++u) {
        if (o + u * stride >= own_end) continue;
        for (int p = 1; p < c.world; ++p) {
          const int peer = (c.rank + p) % c.world;
          storeVec16(reinterpret_cast<uint4*>(c.bufs[peer] + slot_off) + c.world * seg_cap +
                         c.rank * seg_cap + o + u * stride,
                     y[u]);
        }
        storeVec<T, kAligned>(recv, own_first + o + u * stride, count, y[u]);
      }
    }
    if (step + 1 == nsteps) pdlLaunchDependents();

    // 3. All-gather receive: every other segment, from its owner.
    for (int p = 1; p < c.world; ++p) {
      const int d = (c.rank + p) % c.world;
      const size_t end = min(o1, segLen(seg, len, d));
      uint4* src = my_ag + d * seg_cap;
      for (size_t o = o0; o < end; o += stride * c.push_batch) {
        uint4 y[kPushBatch];
#pragma unroll
        for (int u = 0; u < kPushBatch; ++u)
          if (u < c.push_batch && o + u * stride < end) y[u] = loadVolatile(src + o + u * stride);
#pragma unroll
        for (int u = 0; u < kPushBatch; ++u) {
          if (u >= c.push_batch || o + u * stride >= end) continue;
          if (hasSentinel<T>(y[u])) y[u] = waitVec<T>(src + o + u * stride, ctx, c, d, e);
          if (ctx.failed) return;
          storeVec<T, kAligned>(recv, base + d * seg + o + u * stride, count, y[u]);
          storeVec16(src + o + u * stride, sentinelVec());
        }
      }
    }
  }
  if (advance) advanceEpoch(c, epoch0, nsteps);
}

template <int kW>
KernelSet kernelsFor() {
  return KernelSet{{reinterpret_cast<const void*>(&twoShotKernel<float, true, kW>),
                    reinterpret_cast<const void*>(&twoShotKernel<__half, true, kW>),
                    reinterpret_cast<const void*>(&twoShotKernel<__nv_bfloat16, true, kW>)},
                   {reinterpret_cast<const void*>(&twoShotKernel<float, false, kW>),
                    reinterpret_cast<const void*>(&twoShotKernel<__half, false, kW>),
                    reinterpret_cast<const void*>(&twoShotKernel<__nv_bfloat16, false, kW>)}};
}

}  // namespace

KernelSet twoShotKernels(int world) {
  return world <= 2 ? kernelsFor<2>() : world <= 4 ? kernelsFor<4>() : kernelsFor<8>();
}

size_t twoShotChunkVecs(const DeviceComm& c) {
  return c.slot_bytes / kVecBytes / (2 * c.world) * c.world;
}

}  // namespace tpcomm
