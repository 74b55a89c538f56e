// The island all-reduce over the pull protocol (island_pull; pull_device.cuh): the island
// algorithm's four legs (island.cu) with every byte crossing the fabric by a load, for two-socket
// PCIe boxes whose switches collapse posted peer writes. A rank writes what a leg sends into its
// OWN outbox with local stores and publishes it with a flag per block and phase; the readers read
// it from the owner's outbox. Each chunk is one step (one outbox slot), split into m segments;
// member j of each island (its local index) owns segment j:
//   1. every rank copies segment j (j != its own) of its input's chunk into its outbox area j and
//      publishes phase 0;
//   2. member j reads segment j from its island members' outboxes and sums it with its own input
//      in island order (fp32), writes that partial, in fp32, into its outbox's X area and
//      publishes phase 1;
//   3. it reads its partner's partial from the partner's X area and forms (island 0's partial) +
//      (island 1's partial) in fp32, rounded once to T: the push island's adds in its order, so
//      the same bits; it writes that to its output and to its outbox's result area and publishes
//      phase 2;
//   4. every rank reads the other segments of its island from their owners' result areas.
// Outbox slot layout, in entries of seg_cap = slot entries / (m + 3):
//   inputs [0, m*seg_cap) (area j: segment j; mine unused)  X [m*seg_cap, (m+2)*seg_cap)
//   (Q = E/4 fp32 entries a vector)  result [(m+2)*seg_cap, (m+3)*seg_cap).
// Block b of every rank owns the same sub-range of every segment (chunk_layout.h), so its flags
// cover exactly what the peers' blocks b read; the thread that reads an input vector writes that
// output vector later in the step (in-place calls are safe). Why four slots suffice, area by area:
// docs/PROTOCOL.md, "The island over pull".
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/poison_device.cuh"
#include "kernels/device/pull_device.cuh"
#include "kernels/layout/chunk_layout.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

// My island's outboxes in island order, null past the island's m members (kM: its size class).
template <int kM>
__device__ __forceinline__ void islandOutboxes(const DeviceComm& c, const signed char* members,
                                               const int& m, char* (&src)[kM]) {
#pragma unroll
  for (int j = 0; j < kM; ++j) src[j] = j < m ? c.pulls[members[j]] : nullptr;
}

// Leg 1: my input's share of the island members' segments (segment j, j != me) into my outbox
// area j, with local stores, then phase 0 published: the owners read it from there.
template <typename T>
__device__ __forceinline__ void stageForOwners(const DeviceComm& c, const LaunchParams& l,
                                               const ChunkStep& st, uint4* const& mine,
                                               const size_t& slot, const int& m, const int& me,
                                               const T* const& send, const size_t& count,
                                               const size_t& stride, const size_t& seg_cap) {
  for (int p = 1; p < m; ++p) {
    const int j = (me + p) % m;
    pushRange<PullProto, T>(send, st.base + j * st.seg, st.o0, min(st.o1, st.segLen(j)), stride,
                            count, l.aligned, l.push_batch, mine + slot + j * seg_cap, 0);
  }
  bulkPublish<PullProto>(c, blockDim.x, st.epoch);
}

// Leg 2: my segment's island partial (vectors o0, o0 + stride, ... below own_end), summed in island
// order from my input and the members' outbox areas me, into my X area as raw fp32 words,
// canonicalised as the push island sends them (Q entries a vector), then phase 1 published: the
// partner reads it from there.
template <typename T, int kM>
__device__ __forceinline__ void stagePartial(
    const DeviceComm& c, const LaunchParams& l, const ChunkStep& st, char* const (&src)[kM],
    const int& m, const int& me, uint4* const& mine, const size_t& slot, const size_t& xa,
    const size_t& seg_cap, const size_t& o0, const size_t& own_end, const size_t& own_first,
    const size_t& stride, const T* const& send, const size_t& count) {
  constexpr int Q = VecTraits<T>::kElems / 4;  // fp32 entries of a partial sum per data vector
  // Batch of 2, except with 4 sources and fp32 partials of 8 elements (as island.cu).
  constexpr int R = kM * Q <= 4 ? kReduceBatch : 1;
  for (size_t o = o0; o < own_end; o += stride * R) {
    pullAcc<T, kM, R>(src, m, me, slot + me * seg_cap, o, stride, own_end, send, own_first + o,
                      count, l.aligned, [&](int u, const Acc<T>& acc) {
                        if (o + u * stride >= own_end) return;
#pragma unroll
                        for (int h = 0; h < Q; ++h)
                          PullProto::put(mine + slot + xa + (o + u * stride) * Q + h,
                                         canon<float>(acc.quad(h)), 0);
                      });
  }
  bulkPublish<PullPhaseProto<1>>(c, blockDim.x, st.epoch);
}

// Leg 3, one batch (vectors o + u*stride below own_end), once the partner published its partial:
// my partial's words into a and the partner's into b, every load of the batch issued before the
// first sum (each of theirs is a fabric round trip). a, b: the kernel's arrays, so that inlining
// leaves them where the kernel put them.
template <int Q>
__device__ __forceinline__ void loadPartials(const DeviceComm& c, uint4* const& mine,
                                             const size_t& slot, const size_t& xa, const size_t& o,
                                             const size_t& stride, const size_t& own_end,
                                             uint4 (&a)[kReduceBatch][Q],
                                             uint4 (&b)[kReduceBatch][Q]) {
  const uint4* ours = mine + slot + xa;
  const uint4* theirs = reinterpret_cast<const uint4*>(c.pulls[c.partner]) + slot + xa;
#pragma unroll
  for (int u = 0; u < kReduceBatch; ++u) {
    if (o + u * stride >= own_end) continue;
#pragma unroll
    for (int h = 0; h < Q; ++h) {
      a[u][h] = loadVolatile(ours + (o + u * stride) * Q + h);
      b[u][h] = loadVolatile(theirs + (o + u * stride) * Q + h);
    }
  }
}

// Leg 3, vector o + u*stride of that batch: island 0's partial + island 1's in fp32, rounded once
// to T (the push island's adds in its order, so the same bits), into my output and my outbox's
// result area. acc: the kernel's, for the same reason as a and b above.
template <typename T, int Q>
__device__ __forceinline__ void sumIntoResult(const DeviceComm& c, const LaunchParams& l,
                                              const uint4 (&a)[Q], const uint4 (&b)[Q],
                                              uint4* const& mine, const size_t& slot,
                                              const size_t& res, const size_t& o, int u,
                                              const size_t& stride, const size_t& own_first,
                                              T* const& recv, const size_t& count, Acc<T>& acc) {
#pragma unroll
  for (int h = 0; h < Q; ++h) {
    acc.setQuad(h, a[h]);
    acc.addQuad(h, b[h], /*first=*/c.island == 1);
  }
  const uint4 y = acc.result();
  PullProto::put(mine + slot + res + o + u * stride, y, 0);
  storeVec<T>(recv, own_first + o + u * stride, count, l.aligned, y);
}

// Leg 4, once the members published their results: the island's other segments from their
// owners' result areas into my output.
template <typename T>
__device__ __forceinline__ void pullFromOwners(const DeviceComm& c, const LaunchParams& l,
                                               const ChunkStep& st, const signed char* members,
                                               const int& m, const int& me, const size_t& slot,
                                               const size_t& res, const size_t& stride,
                                               T* const& recv, const size_t& count) {
  for (int p = 1; p < m; ++p) {
    const int j = (me + p) % m;
    const uint4* from = reinterpret_cast<const uint4*>(c.pulls[members[j]]) + slot + res;
    pullCopy<T>(from, st.o0, min(st.o1, st.segLen(j)), stride, recv, st.base + j * st.seg, count,
                l.aligned);
  }
}

// kM: the island-size class the kernel was built for (2 or 4 >= c.island_size).
template <typename T, int kM>
__global__ void __launch_bounds__(kThreadsPerBlock) islandPullKernel(TPCOMM_ALL_REDUCE_PARAMS(T)) {
  constexpr int E = VecTraits<T>::kElems;
  constexpr int Q = E / 4;  // fp32 entries of a partial sum per data vector
  const int m = c.island_size;
  const int me = c.island_local;
  const signed char* members = c.island_members[c.island];
  const ChunkedCall k =
      chunkedCall(slotVecs<PullProto>(c), m + 3, m, (count + E - 1) / E, chunk_vecs, gridDim.x);
  const size_t seg_cap = k.seg_cap, stride = blockDim.x;
  const size_t xa = m * seg_cap;         // entry index of the X area
  const size_t res = (m + 2) * seg_cap;  // entry index of the result area
  char* src[kM];                         // my island's outboxes, in island order
  islandOutboxes(c, members, m, src);
  uint4* const mine = reinterpret_cast<uint4*>(c.pulls[c.rank]);
  // Thread t of a phase-0 or phase-2 wait polls island member me + 1 + t.
  const auto islandPeer = [members, m, me](int t) {
    return static_cast<int>(members[(me + 1 + t) % m]);
  };
  CallSession session(c, l);
  // Aborted: all of this thread's outputs are poison (poison_device.cuh).
  if (!session.openAndAnnounce<PullProto, T, kMaxRanks>(kCallAllReduce, count))
    return poisonChunkSteps<T>(chunkStepOffsets(k, 0, blockIdx.x, threadIdx.x), m, recv, count,
                               l.aligned);
  WaitCtx wait = session.startWaits();
  const bool checker = isPrintChecker();  // the thread that announced: it checks the peers'
  for (size_t step = 0; step < k.nsteps; ++step) {
    const ChunkStep st = session.chunk<PullProto>(k, step);
    const size_t slot = st.slot_off / kVecBytes, base = st.base, seg = st.seg;

    // 1. My input's share of the island members' segments into my outbox, published.
    stageForOwners<T>(c, l, st, mine, slot, m, me, send, count, stride, seg_cap);
    if (step == 0 && checker)
      session.checkPeers<PullProto>(wait, session.print<T>(kCallAllReduce, count));
    if (!pullAwaitFrom<0>(c, threadIdx.x, blockDim.x, m - 1, islandPeer, st.epoch, wait)) {
      // Gave up: this step's outputs and the later ones' are poison (poison_device.cuh).
      poisonChunkSteps<T>(st, m, recv, count, l.aligned);
      return;
    }

    // 2. My segment's island partial into my X area, published.
    const size_t own_end = min(st.o1, st.segLen(me));
    const size_t own_first = base + me * seg;  // vector index of my segment's start
    stagePartial<T, kM>(c, l, st, src, m, me, mine, slot, xa, seg_cap, st.o0, own_end, own_first,
                        stride, send, count);
    if (!pullAwaitFrom<1>(
            c, threadIdx.x, blockDim.x, 1, [&c](int) { return c.partner; }, st.epoch, wait)) {
      poisonChunkSteps<T>(st, m, recv, count, l.aligned);
      return;
    }

    // 3. Island 0's partial + island 1's, rounded once: to my output and my result area.
    for (size_t o = st.o0; o < own_end; o += stride * kReduceBatch) {
      uint4 a[kReduceBatch][Q], b[kReduceBatch][Q];  // every load of the batch first
      loadPartials(c, mine, slot, xa, o, stride, own_end, a, b);
#pragma unroll
      for (int u = 0; u < kReduceBatch; ++u) {
        if (o + u * stride >= own_end) continue;
        Acc<T> acc;
        sumIntoResult<T>(c, l, a[u], b[u], mine, slot, res, o, u, stride, own_first, recv, count,
                         acc);
      }
    }
    bulkPublish<PullPhaseProto<2>>(c, blockDim.x, st.epoch);
    if (step + 1 == k.nsteps) pdlLaunchDependents();
    if (!pullAwaitFrom<2>(c, threadIdx.x, blockDim.x, m - 1, islandPeer, st.epoch, wait)) {
      poisonChunkSteps<T>(st, m, recv, count, l.aligned);
      return;
    }

    // 4. The island's other segments from their owners' result areas.
    pullFromOwners<T>(c, l, st, members, m, me, slot, res, stride, recv, count);
  }
  session.close(k.nsteps);
}

TPCOMM_KERNEL_ENTRY(IslandPull, islandPullKernel<T, kW>);

}  // namespace

KernelSet islandPullKernels(int world) {
  return kernelSetByIsland<IslandPull, PullProto>(world);
}

}  // namespace tpcomm
