// Hierarchical ("island") push all-reduce for two-socket PCIe boxes: the ranks form two islands of
// m ranks (c.island_members), and only the partial sums cross between them. Rank k of an island
// (its local index) is the partner of rank k of the other. Each chunk of the message is one step
// (one slot) and is split into m segments; member j of each island owns segment j:
//   1. every rank pushes segment j of its input into member j's RS area ([source k][seg_cap]);
//   2. member j sums its island's segment j in island order (fp32) and pushes that partial sum,
//      in fp32, into its partner's X area (so 2 entries a vector for 16-bit types);
//   3. it waits for the partner's partial and forms (island 0's partial) + (island 1's partial)
//      in fp32, rounded once to T: both partners compute the same bits from the same two fp32
//      values, and the result differs from a rank-order sum only in the order of the fp32 adds;
//      it writes that to its output and pushes it into every island member's AG area;
//   4. every rank copies the other segments from its AG area to its output.
// Per data vector, the inter-island link carries one fp32 partial each way (fp32: 16 bytes,
// 16-bit types: 32 bytes), against m/2 vectors each way for the flat two-shot.
// Slot layout, in entries of seg_cap = slot entries / (2m + 2):
//   RS [0, m*seg_cap)  X [m*seg_cap, (m+2)*seg_cap)  AG [(m+2)*seg_cap, (2m+2)*seg_cap).
// A thread handles the same offsets of every segment and area in every step of the call, and the
// thread that reads an input vector writes that output vector (in-place calls are safe). Why 4
// slots suffice: docs/PROTOCOL.md. Peer memory only (the sentinel protocol).
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/poison_device.cuh"
#include "kernels/device/session_device.cuh"
#include "kernels/layout/chunk_layout.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

using Proto = SentinelProto;

// Step 1, reduce-scatter inside the island: segment j of my input into member j's RS area.
template <typename T, typename SlotOf>
__device__ __forceinline__ void pushToOwners(const LaunchParams& l, const ChunkStep& st,
                                             const SlotOf& slotOf, const signed char* members,
                                             const int& m, const int& me, const T* const& send,
                                             const size_t& count, const size_t& stride,
                                             const size_t& seg_cap, const uint32_t& flag) {
  for (int p = 1; p < m; ++p) {
    const int j = (me + p) % m;
    const size_t end = min(st.o1, st.segLen(j));
    pushRange<Proto, T>(send, st.base + j * st.seg, st.o0, end, stride, count, l.aligned,
                        l.push_batch, slotOf(members[j]) + me * seg_cap, flag);
  }
}

// Step 4, all-gather receive: the other segments of the island, from their owners' pushes into
// my AG area. False: timed out.
template <typename T>
__device__ __forceinline__ bool receiveFromOwners(CallSession& session, WaitCtx& wait,
                                                  const ChunkStep& st, uint4* ag_area,
                                                  const signed char* members, const int& m,
                                                  const int& me, T* const& recv,
                                                  const size_t& count, const size_t& stride,
                                                  const size_t& seg_cap) {
  for (int p = 1; p < m; ++p) {
    const int j = (me + p) % m;
    const size_t end = min(st.o1, st.segLen(j));
    if (!session.template receive<Proto, T>(wait, ag_area + j * seg_cap, st.o0, end, stride, recv,
                                            st.base + j * st.seg, count, members[j], st.epoch))
      return false;
  }
  return true;
}

// Step 2, one batch of my segment (vectors o + u*stride below own_end): my island's sums of it in
// island order (fp32), pushed raw in fp32 into the partner's X area (2 entries a vector); acc (the
// kernel's, so that inlining leaves it where the kernel put it) keeps them for step 3, which
// follows at once (the push island runs both legs batch by batch). False: timed out.
template <typename T, int kM, int R>
__device__ __forceinline__ bool pushPartials(CallSession& session, WaitCtx& wait,
                                             const ChunkStep& st, const signed char* members,
                                             const int& m, const int& me, uint4* const& mine,
                                             uint4* const& to_partner, const size_t& seg_cap,
                                             const size_t& o, const size_t& stride,
                                             const size_t& own_end, const size_t& own_first,
                                             const T* const& send, const size_t& count,
                                             const uint32_t& flag, Acc<T> (&acc)[R]) {
  constexpr int Q = VecTraits<T>::kElems / 4;
  if (!session.template sum<Proto, T, kM, R>(
          wait, m, me, [members](int k) { return static_cast<int>(members[k]); }, mine, seg_cap, o,
          stride, own_end, send, own_first + o, count, st.epoch,
          [&acc](int u, const Acc<T>& a) { acc[u] = a; }))
    return false;
#pragma unroll
  for (int u = 0; u < R; ++u) {
    if (o + u * stride >= own_end) continue;
#pragma unroll
    for (int h = 0; h < Q; ++h)
      Proto::put(to_partner + (o + u * stride) * 2 + h, canon<float>(acc[u].quad(h)), flag);
  }
  return true;
}

// Step 3, one vector of my segment once the partner's partial (theirs, Q raw fp32 quads) arrived:
// island 0's partial + island 1's in fp32, rounded once to T, so that both partners compute the
// same bits from the same two values. acc: my partial, from step 2.
template <typename T>
__device__ __forceinline__ uint4 sumWithPartner(const DeviceComm& c,
                                                const uint4 (&theirs)[VecTraits<T>::kElems / 4],
                                                Acc<T>& acc) {
  constexpr int Q = VecTraits<T>::kElems / 4;
#pragma unroll
  for (int h = 0; h < Q; ++h) acc.addQuad(h, theirs[h], /*first=*/c.island == 1);
  return acc.result();
}

// Step 3's result y for vector o + u*stride of my segment: into every other island member's AG
// area (their step 4 copies it from there) and my output. y comes from the kernel: computed in
// here, it changed the kernel's SASS.
template <typename T, typename SlotOf>
__device__ __forceinline__ void shareResult(const LaunchParams& l, const SlotOf& slotOf,
                                            const signed char* members, const int& m, const int& me,
                                            const size_t& ag, const size_t& seg_cap,
                                            const size_t& o, int u, const size_t& stride,
                                            const size_t& own_first, T* const& recv,
                                            const size_t& count, const uint32_t& flag,
                                            const uint4& y) {
  for (int p = 1; p < m; ++p)
    Proto::put(slotOf(members[(me + p) % m]) + ag + me * seg_cap + o + u * stride, y, flag);
  storeVec<T>(recv, own_first + o + u * stride, count, l.aligned, y);
}

// kM: the island-size class the kernel was built for (2 or 4 >= c.island_size).
template <typename T, int kM>
__global__ void __launch_bounds__(kThreadsPerBlock) islandKernel(TPCOMM_ALL_REDUCE_PARAMS(T)) {
  constexpr int E = VecTraits<T>::kElems;
  constexpr int Q = E / 4;  // fp32 entries of a partial sum per data vector
  const int m = c.island_size;
  const int me = c.island_local;
  const signed char* members = c.island_members[c.island];
  const ChunkedCall k =
      chunkedCall(slotVecs<Proto>(c), 2 * m + 2, m, (count + E - 1) / E, chunk_vecs, gridDim.x);
  const size_t seg_cap = k.seg_cap;
  const size_t stride = blockDim.x;
  const size_t xa = m * seg_cap;        // entry index of the X area
  const size_t ag = (m + 2) * seg_cap;  // entry index of the AG area: [owner][seg_cap]
  CallSession session(c, l);
  // Aborted: all of this thread's outputs are poison (poison_device.cuh).
  if (!session.openAndAnnounce<Proto, T, kMaxRanks>(kCallAllReduce, count))
    return poisonChunkSteps<T>(chunkStepOffsets(k, 0, blockIdx.x, threadIdx.x), m, recv, count,
                               l.aligned);
  WaitCtx wait = session.startWaits();
  const bool checker = isPrintChecker();  // the thread that announced: it checks the peers'
  for (size_t step = 0; step < k.nsteps; ++step) {
    const ChunkStep st = session.chunk<Proto>(k, step);
    const uint32_t flag = stepFlag(st.epoch);
    const size_t slot_off = st.slot_off, base = st.base, seg = st.seg, o0 = st.o0, o1 = st.o1;
    auto slotOf = [&](int rank) {
      return reinterpret_cast<uint4*>(Proto::bufs(c)[rank] + slot_off);
    };
    uint4* mine = slotOf(c.rank);

    pushToOwners<T>(l, st, slotOf, members, m, me, send, count, stride, seg_cap, flag);  // 1.
    if (step == 0 && checker)
      session.checkPeers<Proto>(wait, session.print<T>(kCallAllReduce, count));

    // 2. + 3. My segment, batch by batch: the island's partial sum, exchanged with the partner in
    // fp32, summed island 0 first, rounded once; written out and pushed to every AG area.
    const size_t own_end = min(o1, st.segLen(me));
    const size_t own_first = base + me * seg;  // vector index of my segment's start
    uint4* to_partner = slotOf(c.partner) + xa;
    // Batch of 2 keeps the sources' entries in registers, except with 4 sources and fp32 partials
    // of 8 elements (it spills under the 128-register bound of 512 threads).
    constexpr int R = kM * Q <= 4 ? kReduceBatch : 1;
    for (size_t o = o0; o < own_end; o += stride * R) {
      Acc<T> acc[R];
      // Timed out: this step's outputs and the later ones' are poison (poison_device.cuh); no
      // block-wide barrier follows.
      if (!pushPartials<T, kM, R>(session, wait, st, members, m, me, mine, to_partner, seg_cap, o,
                                  stride, own_end, own_first, send, count, flag, acc)) {
        poisonChunkSteps<T>(st, m, recv, count, l.aligned);
        return;
      }
#pragma unroll
      for (int u = 0; u < R; ++u) {
        if (o + u * stride >= own_end) continue;
        uint4 theirs[Q];  // the partner's partial (waited for here: a timeout leaves the kernel)
        if (!session.template take<Proto, Q>(wait, mine + xa + (o + u * stride) * 2, flag,
                                             c.partner, st.epoch, theirs)) {
          poisonChunkSteps<T>(st, m, recv, count, l.aligned);
          return;
        }
        const uint4 y = sumWithPartner<T>(c, theirs, acc[u]);
        shareResult<T>(l, slotOf, members, m, me, ag, seg_cap, o, u, stride, own_first, recv, count,
                       flag, y);
      }
    }
    if (step + 1 == k.nsteps) pdlLaunchDependents();

    if (!receiveFromOwners<T>(session, wait, st, mine + ag, members, m, me, recv, count, stride,
                              seg_cap)) {
      poisonChunkSteps<T>(st, m, recv, count, l.aligned);  // 4. timed out
      return;
    }
  }
  session.close(k.nsteps);
}

TPCOMM_KERNEL_ENTRY(Island, islandKernel<T, kW>);

}  // namespace

KernelSet islandKernels(int world) {
  return kernelSetByIsland<Island, SentinelProto>(world);
}

}  // namespace tpcomm
