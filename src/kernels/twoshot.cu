// Two-shot push all-reduce (bandwidth path): reduce-scatter then all-gather, chunked through the
// staging slots so the message size is not capped by the buffer. Each chunk is one step (one slot):
//   1. every rank pushes segment d of the chunk into rank d's RS area;
//   2. rank d sums its segment in rank order, writes it to its output and pushes the sum into
//      every peer's AG area;
//   3. every rank copies the other segments from its AG area to its output.
// Block b of every rank owns the same sub-range of every segment, so the three phases of a block
// need no grid-wide barrier, and the thread that reads an input vector is the one that later
// writes that output vector (in-place calls are safe). Arrival is carried by the data, as in the
// one-shot kernel (proto_device.cuh); the call's session (session_device.cuh) holds the epoch
// that rotates the slots and bounds the waits.
#include "kernels/algo_launch.h"
#include "kernels/chunk_layout.h"
#include "kernels/kernel_set.cuh"
#include "kernels/session_device.cuh"

namespace tpcomm {
namespace {

template <typename Proto, typename T, int kW>
__global__ void __launch_bounds__(kThreadsPerBlock)
    twoShotKernel(const __grid_constant__ DeviceComm c, const T* send, T* recv, size_t count,
                  size_t chunk_vecs) {
  constexpr int E = VecTraits<T>::kElems;
  constexpr int K = Proto::kEntry;
  const int world = c.world;
  const ChunkedCall k =
      chunkedCall(slotVecs<Proto>(c), 2 * world, world, (count + E - 1) / E, chunk_vecs, gridDim.x);
  const size_t seg_cap = k.seg_cap;
  const size_t stride = blockDim.x;
  const size_t ag = world * seg_cap;  // entry index of the AG area: [owner][seg_cap]
  CallSession session(c);
  pdlWait();
  if (!session.openArrived()) return;  // communicator aborted by an earlier timeout
  WaitCtx wait = session.startWaits();
  // The call's fingerprint: out before the first push, the peers' checked before the first wait
  // for data (print_device.cuh).
  const bool checker = isPrintChecker();
  if (checker) session.announce<Proto, kW>(session.print<T>(kCallAllReduce, count));
  for (size_t step = 0; step < k.nsteps; ++step) {
    const ChunkStep st =
        chunkStep(k, session.epoch, step, Proto::slotBytes(c), blockIdx.x, threadIdx.x);
    const uint32_t flag = stepFlag(st.epoch);
    const size_t slot_off = st.slot_off, base = st.base, seg = st.seg, o0 = st.o0, o1 = st.o1;
    uint4* mine = reinterpret_cast<uint4*>(Proto::bufs(c)[c.rank] + slot_off);

    // 1. Reduce-scatter push: segment d of my input into rank d's RS area ([source][seg_cap]).
    for (int p = 1; p < world; ++p) {
      const int d = (c.rank + p) % world;
      const size_t end = min(o1, st.segLen(d));
      uint4* dst = reinterpret_cast<uint4*>(Proto::bufs(c)[d] + slot_off);
      pushRange<Proto, T>(c, send, base + d * seg, o0, end, stride, count,
                          dst + c.rank * seg_cap * K, flag);
    }
    if (step == 0 && checker)
      session.checkPeers<Proto>(wait, session.print<T>(kCallAllReduce, count));

    // 2. Reduce my segment in rank order; write it out and push it to every peer's AG area.
    const size_t own_end = min(o1, st.segLen(c.rank));
    const size_t own_first = base + c.rank * seg;      // vector index of my segment's start
    constexpr int R = kW * K <= 4 ? kReduceBatch : 1;  // keeps the peers' entries in registers
    for (size_t o = o0; o < own_end; o += stride * R) {
      uint4 y[R];
      if (!session.template reduce<Proto, T, kW>(wait, mine, seg_cap, o, stride, own_end, send,
                                                 own_first + o, count, st.epoch, y))
        return;  // timed out; no block-wide barrier follows
#pragma unroll
      for (int u = 0; u < R; ++u) {
        if (o + u * stride >= own_end) continue;
        for (int p = 1; p < world; ++p) {
          uint4* dst = reinterpret_cast<uint4*>(Proto::bufs(c)[(c.rank + p) % world] + slot_off);
          Proto::put(dst + (ag + c.rank * seg_cap + o + u * stride) * K, y[u], flag);
        }
        storeVec<T>(recv, own_first + o + u * stride, count, c.aligned, y[u]);
      }
    }
    if (step + 1 == k.nsteps) pdlLaunchDependents();

    // 3. All-gather receive: every other segment, from its owner.
    for (int p = 1; p < world; ++p) {
      const int d = (c.rank + p) % world;
      const size_t end = min(o1, st.segLen(d));
      if (!session.template receive<Proto, T>(wait, mine + (ag + d * seg_cap) * K, o0, end, stride,
                                              recv, base + d * seg, count, d, st.epoch))
        return;  // timed out
    }
  }
  session.close(k.nsteps);
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
