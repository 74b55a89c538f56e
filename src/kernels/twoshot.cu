// Two-shot push all-reduce (bandwidth path): reduce-scatter then all-gather, chunked through the
// staging slots so the message size is not capped by the buffer. Each chunk is one step (one slot):
//   1. every rank pushes segment d of the chunk into rank d's RS area;
//   2. rank d sums its segment in rank order, writes it to its output and pushes the sum into
//      every peer's AG area;
//   3. every rank copies the other segments from its AG area to its output.
// Block b of every rank owns the same sub-range of every segment, so the three phases of a block
// need no grid-wide barrier, and the thread that reads an input vector is the one that later
// writes that output vector (in-place calls are safe). Arrival is carried by the data, as in the
// one-shot kernel (proto_device.cuh), and slots rotate by step epoch.
#include "kernels/algo_launch.h"
#include "kernels/batch_device.cuh"
#include "kernels/epoch_device.cuh"
#include "kernels/kernel_set.cuh"

namespace tpcomm {
namespace {

__device__ __forceinline__ size_t segLen(size_t seg, size_t len, int d) {
  const size_t first = static_cast<size_t>(d) * seg;
  return first >= len ? 0 : min(seg, len - first);
}

template <typename Proto, typename T, int kW>
__global__ void __launch_bounds__(kThreadsPerBlock)
    twoShotKernel(const __grid_constant__ DeviceComm c, const T* send, T* recv, size_t count,
                  size_t chunk_vecs) {
  pdlWait();
  constexpr int E = VecTraits<T>::kElems;
  constexpr int K = Proto::kEntry;
  const size_t seg_cap = slotVecs<Proto>(c) / (2 * c.world);  // entries per area and rank
  chunk_vecs = min(chunk_vecs, seg_cap * c.world);
  const size_t nvec = (count + E - 1) / E;
  const size_t nsteps = (nvec + chunk_vecs - 1) / chunk_vecs;
  const unsigned long long epoch0 = readEpoch(c);
  if (epoch0 == ~0ull) return;  // communicator aborted by an earlier timeout
  const bool advance = arriveEpoch(c);

  const size_t stride = blockDim.x;
  // A block's offsets within a segment are the same in every step (even in a shorter last step),
  // so the entries a thread reads in step s are written in step s+4 by the same thread index of
  // its peers, which cannot get there before this thread is done with step s (docs/PROTOCOL.md).
  const size_t seg_full = (min(chunk_vecs, nvec) + c.world - 1) / c.world;
  const size_t per_call = (seg_full + gridDim.x - 1) / gridDim.x;
  WaitCtx ctx = makeWaitCtx(c);
  for (size_t step = 0; step < nsteps; ++step) {
    const unsigned long long e = epoch0 + step;
    const uint32_t flag = stepFlag(e);
    const size_t slot_off = (e % kNumSlots) * Proto::slotBytes(c);
    const size_t base = step * chunk_vecs;  // first vector of the chunk
    const size_t len = min(chunk_vecs, nvec - base);
    const size_t seg = (len + c.world - 1) / c.world;
    const size_t per = per_call;                       // fixed for the call (above)
    const size_t o0 = blockIdx.x * per + threadIdx.x;  // this thread's first offset in a segment
    const size_t o1 = min(blockIdx.x * per + per, seg);
    uint4* mine = reinterpret_cast<uint4*>(Proto::bufs(c)[c.rank] + slot_off);
    const size_t ag = c.world * seg_cap;  // entry index of the AG area: [owner][seg_cap]

    // 1. Reduce-scatter push: segment d of my input into rank d's RS area ([source][seg_cap]).
    for (int p = 1; p < c.world; ++p) {
      const int d = (c.rank + p) % c.world;
      const size_t end = min(o1, segLen(seg, len, d));
      uint4* dst = reinterpret_cast<uint4*>(Proto::bufs(c)[d] + slot_off);
      pushRange<Proto, T>(c, send, base + d * seg, o0, end, stride, count,
                          dst + c.rank * seg_cap * K, flag);
    }

    // 2. Reduce my segment in rank order; write it out and push it to every peer's AG area.
    const size_t own_end = min(o1, segLen(seg, len, c.rank));
    const size_t own_first = base + c.rank * seg;      // vector index of my segment's start
    constexpr int R = kW * K <= 4 ? kReduceBatch : 1;  // keeps the peers' entries in registers
    for (size_t o = o0; o < own_end; o += stride * R) {
      uint4 y[R];
      if (!reduceBatch<Proto, T, kW>(c, mine, seg_cap, o, stride, own_end, send, own_first + o,
                                     count, e, ctx, y))
        return;  // timed out; no block-wide barrier follows
#pragma unroll
      for (int u = 0; u < R; ++u) {
        if (o + u * stride >= own_end) continue;
        for (int p = 1; p < c.world; ++p) {
          uint4* dst = reinterpret_cast<uint4*>(Proto::bufs(c)[(c.rank + p) % c.world] + slot_off);
          Proto::put(dst + (ag + c.rank * seg_cap + o + u * stride) * K, y[u], flag);
        }
        storeVec<T>(recv, own_first + o + u * stride, count, c.aligned, y[u]);
      }
    }
    if (step + 1 == nsteps) pdlLaunchDependents();

    // 3. All-gather receive: every other segment, from its owner.
    for (int p = 1; p < c.world; ++p) {
      const int d = (c.rank + p) % c.world;
      const size_t end = min(o1, segLen(seg, len, d));
      if (!receiveRange<Proto, T>(c, mine + (ag + d * seg_cap) * K, o0, end, stride, recv,
                                  base + d * seg, count, d, e, ctx))
        return;  // timed out
    }
  }
  if (advance) advanceEpoch(c, epoch0, nsteps);
}

struct TwoShot {
  template <typename Proto, typename T, int kW>
  static const void* get() {
    return reinterpret_cast<const void*>(&twoShotKernel<Proto, T, kW>);
  }
};

}  // namespace

KernelSet twoShotKernels(int world) {
  return kernelSetByWorld<TwoShot, SentinelProto>(world);
}
KernelSet hostTwoShotKernels(int world) {
  return kernelSetByWorld<TwoShot, LLProto>(world);
}

}  // namespace tpcomm
