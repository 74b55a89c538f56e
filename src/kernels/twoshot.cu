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
#include "kernels/epoch_device.cuh"
#include "kernels/vec_device.cuh"
#include "kernels/wait_device.cuh"

namespace tpcomm {
namespace {

__device__ __forceinline__ size_t segLen(size_t seg, size_t len, int d) {
  const size_t first = static_cast<size_t>(d) * seg;
  return first >= len ? 0 : min(seg, len - first);
}

template <typename T, bool kAligned>
__global__ void __launch_bounds__(kThreadsPerBlock)
    twoShotKernel(const __grid_constant__ DeviceComm c, const T* send, T* recv, size_t count, size_t chunk_vecs) {
  pdlWait();
  constexpr int E = VecTraits<T>::kElems;
  const size_t nvec = (count + E - 1) / E;
  const size_t nsteps = (nvec + chunk_vecs - 1) / chunk_vecs;
  const unsigned long long epoch0 = readEpoch(c);
  if (epoch0 == ~0ull) return;  // communicator aborted by an earlier timeout
  endEpoch(c, epoch0, nsteps);

  const size_t seg_cap = c.slot_bytes / kVecBytes / (2 * c.world);  // vectors per area entry
  WaitCtx ctx = makeWaitCtx(c);
  for (size_t step = 0; step < nsteps; ++step) {
    const unsigned long long e = epoch0 + step;
    const size_t slot_off = (e % kNumSlots) * c.slot_bytes;
    const size_t base = step * chunk_vecs;  // first vector of the chunk
    const size_t len = min(chunk_vecs, nvec - base);
    const size_t seg = (len + c.world - 1) / c.world;
    const size_t per = (seg + gridDim.x - 1) / gridDim.x;
    const size_t o0 = blockIdx.x * per;
    const size_t o1 = min(o0 + per, seg);
    uint4* mine = reinterpret_cast<uint4*>(c.bufs[c.rank] + slot_off);
    uint4* my_rs = mine;                        // [source rank][seg_cap]
    uint4* my_ag = mine + c.world * seg_cap;    // [owner rank][seg_cap]

    // 1. Reduce-scatter push: segment d of my input to rank d.
    for (int p = 1; p < c.world; ++p) {
      const int d = (c.rank + p) % c.world;
      const size_t end = min(o1, segLen(seg, len, d));
      uint4* dst = reinterpret_cast<uint4*>(c.bufs[d] + slot_off) + c.rank * seg_cap;
      for (size_t o = o0 + threadIdx.x; o < end; o += blockDim.x)
        storeVec16(dst + o, canon<T>(loadVec<T, kAligned>(send, base + d * seg + o, count)));
    }

    // 2. Reduce my segment in rank order; write it out and push it to every peer.
    const size_t own_end = min(o1, segLen(seg, len, c.rank));
    for (size_t o = o0 + threadIdx.x; o < own_end; o += blockDim.x) {
      const size_t v = base + c.rank * seg + o;
      uint4 x[kMaxRanks];
#pragma unroll
      for (int r = 0; r < kMaxRanks; ++r)
        if (r < c.world && r != c.rank) x[r] = loadVolatile(my_rs + r * seg_cap + o);
#pragma unroll
      for (int r = 0; r < kMaxRanks; ++r) {
        if (r >= c.world) break;
        if (r == c.rank) x[r] = canon<T>(loadVec<T, kAligned>(send, v, count));
        else if (hasSentinel<T>(x[r])) x[r] = waitVec<T>(my_rs + r * seg_cap + o, ctx, c, r, e);
      }
      Acc<T> acc;
      acc.set(x[0]);
#pragma unroll
      for (int r = 1; r < kMaxRanks; ++r)
        if (r < c.world) acc.add(x[r]);
      if (ctx.failed) return;
      const uint4 y = acc.result();
      for (int p = 1; p < c.world; ++p) {
        const int peer = (c.rank + p) % c.world;
        storeVec16(reinterpret_cast<uint4*>(c.bufs[peer] + slot_off) + c.world * seg_cap +
                       c.rank * seg_cap + o,
                   y);
      }
      storeVec<T, kAligned>(recv, v, count, y);
#pragma unroll
      for (int r = 0; r < kMaxRanks; ++r)
        if (r < c.world && r != c.rank) storeVec16(my_rs + r * seg_cap + o, sentinelVec());
    }
    if (step + 1 == nsteps) pdlLaunchDependents();

    // 3. All-gather receive: every other segment, from its owner.
    for (int p = 1; p < c.world; ++p) {
      const int d = (c.rank + p) % c.world;
      const size_t end = min(o1, segLen(seg, len, d));
      uint4* src = my_ag + d * seg_cap;
      for (size_t o = o0 + threadIdx.x; o < end; o += blockDim.x) {
        const uint4 y = waitVec<T>(src + o, ctx, c, d, e);
        if (ctx.failed) return;
        storeVec<T, kAligned>(recv, base + d * seg + o, count, y);
        storeVec16(src + o, sentinelVec());
      }
    }
  }
}

template <typename T, bool kAligned>
const void* kernelFor() {
  return reinterpret_cast<const void*>(&twoShotKernel<T, kAligned>);
}

}  // namespace

KernelSet twoShotKernels() {
  return KernelSet{{kernelFor<float, true>(), kernelFor<__half, true>(),
                    kernelFor<__nv_bfloat16, true>()},
                   {kernelFor<float, false>(), kernelFor<__half, false>(),
                    kernelFor<__nv_bfloat16, false>()}};
}

size_t twoShotChunkVecs(const DeviceComm& c) {
  return c.slot_bytes / kVecBytes / (2 * c.world) * c.world;
}

}  // namespace tpcomm
