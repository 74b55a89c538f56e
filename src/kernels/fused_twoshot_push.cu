// The fused all-reduce + add + RMSNorm (+ FP8) over pushes that split the rows by owner (the
// sentinel protocol of the push all-reduce, proto_device.cuh), in two forms of one kernel:
// - the two-shot (fused_p2p_twoshot): the push form of fused_twoshot_pull.cu, for PCIe fabrics
//   whose peer stores hold (no write-collapse verdict), where many rows or a call beyond one step
//   of the push one-shot would otherwise make every rank push every row to every peer, or run
//   unfused. The owners are the ranks.
// - the island (fused_p2p_island): the push island's legs (island.cu) by whole rows, for
//   two-socket boxes whose peer stores hold, where the all-reduce is the push island. The owners
//   are an island's members (local index j owns run j in both islands), and partners exchange
//   their island's partial in fp32 before the residual is added: what crosses the socket link is
//   the partial, once each way, as in the island's all-reduce (and the norm is never sent).
// Each step's rows are split into one run per owner (fused_twoshot_layout.h: fusedPushAreas);
// per step, block b of every rank:
//   1. pushes its input of every other owner's run into that owner's slot, in its own row of the
//      reduce-scatter (RS) areas;
//   2. for its rows of its own run, waits for every source's entries (the data says it arrived),
//      sums them in rank (island) order in fp32; the island pushes that partial into its
//      partner's X area and adds the partner's (island 0's first, island.cu's order: both
//      partners compute the same bits); adds the residual (the one rounding of every path,
//      fused_device.cuh), normalises from its registers and pushes the residual rows into every
//      other owner's slot, in its own row of the all-gather (AG) areas;
//   3. for its rows of every other run, waits for the owner's residual rows in its AG area,
//      stores them and normalises them (the owner's threads, order and bits).
// Readers clear what they read (the sentinel protocol), and each phase's entries are read by the
// writer's same block and thread, so the slots rotate as the push two-shot's do (twoshot.cu;
// docs/PROTOCOL.md, "The fused two-shot over pushes", "The fused island over pushes"). Rows that
// fit the registers only (the planner checks, fused_plan.cc).
#include "kernels/device/fused_pull_device.cuh"
#include "kernels/device/kernel_set.cuh"
#include "kernels/fused_oneshot.h"
#include "kernels/layout/fused_twoshot_layout.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

using namespace fused_pull;
using Proto = SentinelProto;

// The owners of a call's runs as the kernel sees them: every rank (the two-shot), or my island's
// members by local index (the island).
template <bool kIsland>
struct Owners {
  int n;   // owners (runs a step)
  int me;  // my index among them
  const signed char* members;
  __device__ __forceinline__ explicit Owners(const DeviceComm& c)
      : n(kIsland ? c.island_size : c.world),
        me(kIsland ? c.island_local : c.rank),
        members(kIsland ? c.island_members[c.island] : nullptr) {}
  __device__ __forceinline__ int rankOf(int j) const {
    return kIsland ? static_cast<int>(members[j]) : j;
  }
  // Owner me + q (q in 1 .. n - 1): ringRank, not `%` (oneshot_lean.cu says why).
  __device__ __forceinline__ int after(int q) const { return ringRank(me, q, n); }
};

// Island 0's partial + island 1's of this thread's vectors of one row (a[u]: my island's, in
// fp32): mine pushed into my partner's X area, its own taken from mine (the same block and
// thread), island 0's first. A thread whose wait gave up pushes nothing: the partner's wait for
// it gives up too, and no partial is invented.
template <typename T, int V>
__device__ __forceinline__ void exchangePartial(CallSession& session, const DeviceComm& c,
                                                WaitCtx& wait, uint4* to_partner, uint4* from,
                                                size_t base, size_t hv, uint32_t flag,
                                                unsigned long long step, Acc<T> (&a)[V]) {
  constexpr int Q = VecTraits<T>::kElems / 4;  // fp32 vectors a data vector
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = threadIdx.x + u * blockDim.x;
    if (j >= hv || wait.failed) continue;
#pragma unroll
    for (int h = 0; h < Q; ++h)
      Proto::put(to_partner + (base + j) * Q + h, canon<float>(a[u].quad(h)), flag);
  }
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = threadIdx.x + u * blockDim.x;
    uint4 theirs[Q];
    if (j >= hv || wait.failed ||
        !session.take<Proto, Q>(wait, from + (base + j) * Q, flag, c.partner, step, theirs))
      continue;
#pragma unroll
    for (int h = 0; h < Q; ++h) a[u].addQuad(h, theirs[h], /*first=*/c.island == 1);
  }
}

// One step as fusedSplitPush's phases see it: the owners, the vectors of a row and of an area, the
// step's rows, epoch and flag, and every rank's slot of the step. It holds references to the
// kernel's values, so that inlining leaves every load where the kernel put it.
template <bool kIsland>
struct PushStep {
  const Owners<kIsland>& own;
  const size_t& hv;         // vectors a row
  const size_t& area_vecs;  // vectors an area
  const FusedTwoShotStep& st;
  const unsigned long long& step;  // the step's epoch
  const uint32_t& flag;
  char* const* const& slots;  // every rank's slots, as seen from here
  const size_t& slot_off;     // the step's slot within each
  __device__ __forceinline__ uint4* slotOf(int rank) const {
    return reinterpret_cast<uint4*>(slots[rank] + slot_off);
  }
};

// Phase 1: my input of every other run into its owner's RS area, my row (an owner sums its run
// from its own slot alone).
template <typename T, bool kIsland>
__device__ __forceinline__ void pushOtherRuns(const FusedParams& p, const PushStep<kIsland>& x) {
  const Owners<kIsland>& own = x.own;
  const size_t& hv = x.hv;
  for (int q = 1; q < own.n; ++q) {
    const int d = own.after(q);
    uint4* rs = x.slotOf(own.rankOf(d)) + own.me * x.area_vecs;
    const size_t first = x.st.first + x.st.runBegin(d);
    for (size_t i = blockIdx.x; i < x.st.runLen(d); i += gridDim.x)
      for (size_t j = threadIdx.x; j < hv; j += blockDim.x)
        Proto::put(rs + i * hv + j,
                   canon<T>(static_cast<const uint4*>(p.send)[(first + i) * hv + j]), x.flag);
  }
}

// Phase 2, row i of my run (message row `row`): every source's entries in my slot summed in rank
// (island) order in fp32 (the island: and the partner's partial added, exchangePartial), the
// residual added; y: the residual row (canonical: what every rank stores). Returns the row's sum
// of squares over the block; *failed: some thread's wait gave up. Every thread takes part in the
// block sum, a timed-out one too, so the block can leave together: no barrier is left waiting.
template <typename T, int kN, bool kIsland, int V>
__device__ __forceinline__ float sumOwnRow(CallSession& session, const DeviceComm& c,
                                           const FusedParams& p, WaitCtx& wait,
                                           const PushStep<kIsland>& x, uint4* const& mine,
                                           const size_t& count, const size_t& i, const size_t& row,
                                           BlockSumScratch& scratch, const unsigned& parity,
                                           uint4 (&y)[V], bool* failed) {
  const Owners<kIsland>& own = x.own;
  const int n = own.n, me = own.me;
  const size_t& hv = x.hv;
  uint4 res[V];
  loadSlice<V>(p.residual_in, row * hv, 0, hv, res);
  float sumsq = 0.f;
#pragma unroll
  for (int u = 0; u < V; ++u) y[u] = make_uint4(0, 0, 0, 0);
  if constexpr (kIsland) {
    Acc<T> a[V];
    session.sum<Proto, T, kN, V>(
        wait, n, me, [&own](int j) { return own.rankOf(j); }, mine, x.area_vecs,
        i * hv + threadIdx.x, blockDim.x, i * hv + hv, static_cast<const T*>(p.send),
        row * hv + threadIdx.x, count, x.step, [&a](int u, const Acc<T>& acc) { a[u] = acc; });
    exchangePartial<T, V>(session, c, wait, x.slotOf(c.partner) + 2 * n * x.area_vecs,
                          mine + 2 * n * x.area_vecs, i * hv, hv, x.flag, x.step, a);
#pragma unroll
    for (int u = 0; u < V; ++u)
      if (threadIdx.x + u * blockDim.x < hv && !wait.failed)
        y[u] = canon<T>(addResidual<T>(a[u], res[u], sumsq));
  } else {
    session.sum<Proto, T, kN, V>(
        wait, n, me, [](int r) { return r; }, mine, x.area_vecs, i * hv + threadIdx.x, blockDim.x,
        i * hv + hv, static_cast<const T*>(p.send), row * hv + threadIdx.x, count, x.step,
        [&](int u, const Acc<T>& acc) { y[u] = canon<T>(addResidual<T>(acc, res[u], sumsq)); });
  }
  return blockSumFixedOrder(sumsq, scratch, parity, wait.failed, failed);
}

// Phase 2, row i of my run once summed: its residual row y into every other owner's AG area, my
// row, for the owners to normalise (phase 3 there).
template <bool kIsland, int V>
__device__ __forceinline__ void pushResidualRow(const PushStep<kIsland>& x, const size_t& i,
                                                const uint4 (&y)[V]) {
  const Owners<kIsland>& own = x.own;
  const int n = own.n, me = own.me;
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = threadIdx.x + u * blockDim.x;
    if (j >= x.hv) continue;
    for (int q = 1; q < n; ++q)
      Proto::put(x.slotOf(own.rankOf(own.after(q))) + (n + me) * x.area_vecs + i * x.hv + j, y[u],
                 x.flag);
  }
}

// Phase 3, row i of owner d's run: the owner's residual row from my AG area `ag` into y, the
// owner's bits (a thread whose wait gave up keeps zeros). Returns the row's sum of squares over the
// block, as sumOwnRow does (the owner's threads and order, so the norm matches the owner's too).
template <typename T, bool kIsland, int V>
__device__ __forceinline__ float takeOwnerRow(CallSession& session, WaitCtx& wait,
                                              const PushStep<kIsland>& x, const int& d,
                                              uint4* const& ag, const size_t& i,
                                              BlockSumScratch& scratch, const unsigned& parity,
                                              uint4 (&y)[V], bool* failed) {
  const size_t& hv = x.hv;
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = threadIdx.x + u * blockDim.x;
    uint4 got[1] = {make_uint4(0, 0, 0, 0)};
    if (j < hv && !wait.failed)
      session.take<Proto, 1>(wait, ag + i * hv + j, x.flag, x.own.rankOf(d), x.step, got);
    y[u] = got[0];
  }
  return blockSumFixedOrder(rowSquares<T, V>(y, hv), scratch, parity, wait.failed, failed);
}

// kN: the owner class the kernel was built for (world class, or island-size class).
template <typename T, int kN, bool kQuant, bool kIsland>
__device__ __forceinline__ void fusedSplitPush(const DeviceComm& c, const FusedParams& p) {
  constexpr int E = VecTraits<T>::kElems;
  constexpr int V = kFusedPullVecs;
  __shared__ BlockSumScratch scratch;
  const size_t hv = p.hidden / E;
  const Owners<kIsland> own(c);
  const int n = own.n, me = own.me;
  // p.region: the slot's vectors (the planner's), cut into fusedPushAreas areas.
  const FusedTwoShotSteps k = fusedRunSteps(p.region, hv, n, fusedPushAreas(n, kIsland), p.rows);
  const size_t area_vecs = k.area_rows * hv;
  const size_t count = p.rows * p.hidden;
  char* const* slots = Proto::bufs(c);  // every rank's slots, as seen from here
  const LaunchParams l = fusedLaunchParams();
  CallSession session(c, l);
  uint4 g[V];
  // The island kernels are built per island-size class: the announce covers every rank.
  const RowSplitOpen open = openRowSplit < Proto, kIsland ? kMaxRanks : kN, T,
                     kQuant > (session, p, hv, g);
  WaitCtx wait = session.startWaits();
  unsigned parity = 0;
  for (size_t s = 0; s < k.nsteps; ++s) {
    const FusedTwoShotStep st = fusedTwoShotStep(k, s, n, p.rows);
    const unsigned long long step = session.epoch + s;
    const uint32_t flag = stepFlag(step);
    const size_t slot_off = (step % kNumSlots) * Proto::slotBytes(c);
    const PushStep<kIsland> x{own, hv, area_vecs, st, step, flag, slots, slot_off};
    // 1. My input of every other run into its owner's RS area, my row.
    if (!open.aborted) pushOtherRuns<T>(p, x);
    if (s == 0) {
      // Every thread's epoch read has returned before the block is counted in.
      if (!session.arriveBlock(open.aborted)) {  // aborted before this call: every row is poison
        poisonRunRows<T, kQuant>(p, k, 0, n);
        return;
      }
      // The peers' fingerprints before any wait for their data: a peer in another call is an
      // error here, not a timeout.
      if (open.checker) session.checkPeers<Proto>(wait, fusedPrint<T, kQuant>(session, p));
    }
    // 2. My run: every source's input summed, the residual added, normalised; the residual rows
    //    pushed into every other owner's AG area, my row.
    uint4* const mine = x.slotOf(c.rank);
    const size_t own_first = st.first + st.runBegin(me);
    for (size_t i = blockIdx.x; i < st.runLen(me); i += gridDim.x, parity ^= 1u) {
      const size_t row = own_first + i;
      uint4 y[V];
      bool failed = false;
      const float total = sumOwnRow<T, kN, kIsland, V>(session, c, p, wait, x, mine, count, i, row,
                                                       scratch, parity, y, &failed);
      if (failed) {  // the block leaves together
        poisonRunRows<T, kQuant>(p, k, s, n);
        return;
      }
      pushResidualRow<kIsland, V>(x, i, y);
      storeRowAndNorm<T, kQuant, V>(p, row, hv, y, g, total, open.inv_scale);
    }
    if (s + 1 == k.nsteps) pdlLaunchDependents();
    // 3. Every other run: its owner's residual rows from my AG area, normalised here.
    for (int q = 1; q < n; ++q) {
      const int d = own.after(q);
      uint4* const ag = mine + (n + d) * area_vecs;
      const size_t first = st.first + st.runBegin(d);
      for (size_t i = blockIdx.x; i < st.runLen(d); i += gridDim.x, parity ^= 1u) {
        uint4 y[V];
        bool failed = false;
        const float total =
            takeOwnerRow<T, kIsland, V>(session, wait, x, d, ag, i, scratch, parity, y, &failed);
        if (failed) {
          poisonRunRows<T, kQuant>(p, k, s, n);
          return;
        }
        storeRowAndNorm<T, kQuant, V>(p, first + i, hv, y, g, total, open.inv_scale);
      }
    }
    afterReads<Proto>(c);
  }
  session.close(k.nsteps);
}

template <typename T, int kW, bool kQuant>
__global__ void __launch_bounds__(kThreadsPerBlock)
    fusedTwoShotPushKernel(const __grid_constant__ DeviceComm c,
                           const __grid_constant__ FusedParams p) {
  fusedSplitPush<T, kW, kQuant, false>(c, p);
}

// kM: the island-size class the kernel was built for (2 or 4 >= c.island_size).
template <typename T, int kM, bool kQuant>
__global__ void __launch_bounds__(kThreadsPerBlock)
    fusedIslandPushKernel(const __grid_constant__ DeviceComm c,
                          const __grid_constant__ FusedParams p) {
  fusedSplitPush<T, kM, kQuant, true>(c, p);
}

}  // namespace

TPCOMM_ONE_PASS_FUSED_SETS(fusedTwoShotPush, fusedTwoShotPushKernel, kernelSetByWorld, Proto)
// Built per island-size class for the worlds islandWorld serves.
TPCOMM_ONE_PASS_FUSED_SETS(fusedIslandPush, fusedIslandPushKernel, kernelSetByIsland, Proto)

}  // namespace tpcomm
