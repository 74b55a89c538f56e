// The fused all-reduce + add + RMSNorm (+ FP8) over the island algorithm's pull form
// (island_pull.cu; fused_oneshot.h): for the two-socket PCIe boxes whose switches collapse posted
// peer writes, where the all-reduce is island_pull. The island's legs by whole rows, so that after
// the last leg every rank holds whole residual rows and normalises them where they are stored.
// Each step's rows are split into one run per island member (fused_twoshot_layout.h, parts = m);
// member j of each island (its local index) owns run j. Per step, block b of every rank:
//   1. writes its input of the other members' runs into its own outbox's areas (local stores) and
//      publishes phase 0;
//   2. for its rows of its own run, reads its island members' inputs of them, sums them with its
//      own in island order in fp32 (island_pull's partial, bit for bit) and writes that partial's
//      raw words into its outbox's X area; publishes phase 1;
//   3. reads its partner's partial (the member of the same index in the other island), forms
//      island 0's partial + island 1's in fp32 (island_pull's adds, in its order: both partners
//      compute the same bits), adds the residual (the one rounding of every path,
//      fused_device.cuh), stores residual_out and the same bits into its result area, normalises
//      from its registers and publishes phase 2;
//   4. for its rows of its island's other runs, reads the residual rows from their owners' result
//      areas, stores them and normalises them (the owner's threads, order and bits).
// What crosses the socket link is the partial, once each way, as with island_pull; the norm is
// never sent. Block b of every rank owns the same local rows of every run, so its flags cover
// exactly what the peers' blocks b read; the slots' reuse (four suffice) is island_pull's, area by
// area (docs/PROTOCOL.md, "The island over pull"; "The fused island over pull"). Rows that fit the
// registers only (the planner checks, fused_plan.cc).
#include "kernels/device/fused_pull_device.cuh"
#include "kernels/device/kernel_set.cuh"
#include "kernels/fused_oneshot.h"
#include "kernels/layout/fused_twoshot_layout.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

using namespace fused_pull;

// My island partial of the vectors of one row that this thread holds (u < V, base + tid +
// u * blockDim.x below base + hv), in island order with my own input (x) in my place, written as
// raw fp32 words into X (Q vectors a data vector). src[j]: member j's area holding its input of
// my run (unused for me).
template <typename T, int kM, int V>
__device__ __forceinline__ void writeIslandPartial(const char* const (&src)[kM], int m, int me,
                                                   size_t base, size_t hv, const uint4 (&x)[V],
                                                   uint4* xa) {
  constexpr int Q = VecTraits<T>::kElems / 4;
  uint4 e[V][kM];
#pragma unroll
  for (int u = 0; u < V; ++u) {  // every load first...
    const size_t j = threadIdx.x + u * blockDim.x;
#pragma unroll
    for (int r = 0; r < kM; ++r)
      e[u][r] = j >= hv || r >= m ? make_uint4(0, 0, 0, 0)
                : r == me         ? canon<T>(x[u])
                                  : loadVolatile(reinterpret_cast<const uint4*>(src[r]) + base + j);
  }
#pragma unroll
  for (int u = 0; u < V; ++u) {  // ...then the sums (island_pull's pullAcc order)
    const size_t j = threadIdx.x + u * blockDim.x;
    if (j >= hv) continue;
    Acc<T> acc;
    acc.set(e[u][0]);
#pragma unroll
    for (int r = 1; r < kM; ++r)
      if (r < m) acc.add(e[u][r]);
#pragma unroll
    for (int h = 0; h < Q; ++h) storeVec16(xa + (base + j) * Q + h, canon<float>(acc.quad(h)));
  }
}

// Phases 1, 3 and 4 of a step (the kernel below), each over this block's rows. Phase 2 stays in
// the kernel: as a function, in every form tried, it changed the register allocation and schedule
// of some of the kernels (scripts/sass_diff.sh). These take the kernel's values by reference so
// that inlining leaves every load where the kernel put it.
//
// 1. My input of the island's other runs into their areas of my slot (box), where their owners
// read it: local stores only.
template <typename T>
__device__ __forceinline__ void stageOtherRuns(const FusedParams& p, uint4* const& box,
                                               const FusedTwoShotStep& st, const int& m,
                                               const int& me, const size_t& area_vecs,
                                               const size_t& hv) {
  for (int q = 1; q < m; ++q) {
    const int j = (me + q) % m;
    stageRun<T>(p, box + static_cast<size_t>(fusedTwoShotArea(me, j, m)) * area_vecs,
                st.first + st.runBegin(j), st.runLen(j), hv);
  }
}

// Row i of my run: island 0's partial + island 1's (mine at xa, my partner's at theirs: phase 1,
// awaited) in fp32, in island_pull's order so that both partners compute the same bits, and the
// residual (res) added: y, its squares into sumsq.
template <typename T, int V>
__device__ __forceinline__ void sumPartials(const DeviceComm& c, const uint4* const& xa,
                                            const uint4* const& theirs, const size_t& i,
                                            const size_t& hv, const uint4 (&res)[V], uint4 (&y)[V],
                                            float& sumsq) {
  constexpr int Q = VecTraits<T>::kElems / 4;  // fp32 vectors of a partial per data vector
  uint4 a[V][Q], b[V][Q];                      // every load first
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = threadIdx.x + u * blockDim.x;
#pragma unroll
    for (int h = 0; h < Q; ++h) {
      a[u][h] = j < hv ? loadVolatile(xa + (i * hv + j) * Q + h) : make_uint4(0, 0, 0, 0);
      b[u][h] = j < hv ? loadVolatile(theirs + (i * hv + j) * Q + h) : make_uint4(0, 0, 0, 0);
    }
  }
#pragma unroll
  for (int u = 0; u < V; ++u) {
    y[u] = make_uint4(0, 0, 0, 0);
    if (threadIdx.x + u * blockDim.x >= hv) continue;
    Acc<T> acc;
#pragma unroll
    for (int h = 0; h < Q; ++h) {
      acc.setQuad(h, a[u][h]);
      acc.addQuad(h, b[u][h], /*first=*/c.island == 1);
    }
    y[u] = addResidual<T>(acc, res[u], sumsq);
  }
}

// 3. My run's rows finished: the partials' sum, the residual, residual_out and the norm, and the
// residual rows into my result area for my island's other members (finishOwnRow).
template <typename T, bool kQuant, int V>
__device__ __forceinline__ void finishOwnRun(const DeviceComm& c, const FusedParams& p,
                                             const size_t& slot, uint4* const& box,
                                             uint4* const& xa, const FusedTwoShotStep& st,
                                             const int& m, const int& me, const size_t& area_vecs,
                                             const size_t& own_first, const size_t& hv,
                                             const uint4 (&g)[V], const float& inv_scale,
                                             BlockSumScratch& scratch, unsigned& parity) {
  const uint4* theirs =
      reinterpret_cast<const uint4*>(c.pulls[c.partner] + slot) + (m - 1) * area_vecs;
  uint4* const result = box + (m + 1) * area_vecs;
  for (size_t i = blockIdx.x; i < st.runLen(me); i += gridDim.x, parity ^= 1u) {
    const size_t row = own_first + i;
    uint4 res[V], y[V];
    loadSlice<V>(p.residual_in, row * hv, 0, hv, res);
    float sumsq = 0.f;
    sumPartials<T, V>(c, xa, theirs, i, hv, res, y, sumsq);
    finishOwnRow<T, kQuant, V>(p, row, result + i * hv, hv, y, sumsq, g, inv_scale, scratch,
                               parity);
  }
}

// 4. The island's other runs: their owners' residual rows (phase 2, awaited) from the owners'
// result areas, stored and normalised here with the owners' threads, order and bits.
template <typename T, bool kQuant, int V>
__device__ __forceinline__ void normaliseOtherRuns(const DeviceComm& c, const FusedParams& p,
                                                   const signed char* const& members,
                                                   const size_t& slot, const FusedTwoShotStep& st,
                                                   const int& m, const int& me,
                                                   const size_t& area_vecs, const size_t& hv,
                                                   const uint4 (&g)[V], const float& inv_scale,
                                                   BlockSumScratch& scratch, unsigned& parity) {
  for (int q = 1; q < m; ++q) {
    const int j = (me + q) % m;
    const uint4* from =
        reinterpret_cast<const uint4*>(c.pulls[members[j]] + slot) + (m + 1) * area_vecs;
    normaliseRun<T, kQuant, V>(p, from, st.first + st.runBegin(j), st.runLen(j), hv, g, inv_scale,
                               scratch, parity);
  }
}

// kM: the island-size class the kernel was built for (2 or 4 >= c.island_size).
template <typename T, int kM, bool kQuant>
__global__ void __launch_bounds__(kThreadsPerBlock)
    fusedIslandPullKernel(const __grid_constant__ DeviceComm c,
                          const __grid_constant__ FusedParams p) {
  constexpr int E = VecTraits<T>::kElems;
  constexpr int V = kFusedPullVecs;
  __shared__ BlockSumScratch scratch;
  const size_t hv = p.hidden / E;
  const int m = c.island_size, me = c.island_local;
  const signed char* members = c.island_members[c.island];
  const FusedTwoShotSteps k = fusedIslandSteps(p.region, hv, m, p.rows);
  const size_t area_vecs = k.area_rows * hv;
  char* const mine = c.pulls[c.rank];
  // Thread t of a phase-0 or phase-2 wait polls island member me + 1 + t.
  const auto islandPeer = [members, m, me](int t) {
    return static_cast<int>(members[(me + 1 + t) % m]);
  };
  const LaunchParams l = fusedLaunchParams();
  CallSession session(c, l);

  uint4 g[V];
  const RowSplitOpen open = openRowSplit<PullProto, kMaxRanks, T, kQuant>(session, p, hv, g);
  const bool aborted = open.aborted;
  const float inv_scale = open.inv_scale;
  WaitCtx wait = session.startWaits();
  unsigned parity = 0;
  for (size_t s = 0; s < k.nsteps; ++s) {
    const FusedTwoShotStep st = fusedTwoShotStep(k, s, m, p.rows);
    const unsigned long long step = session.epoch + s;
    const size_t slot = (step % kNumSlots) * c.pull_slot_bytes;
    uint4* const box = reinterpret_cast<uint4*>(mine + slot);
    // 1. My input of the island's other runs into their areas of my slot.
    if (!aborted) stageOtherRuns<T>(p, box, st, m, me, area_vecs, hv);
    // Aborted before this call: every row is poison.
    if (!publishPullStep<T, kQuant>(session, c, p, s, step, aborted, open.checker, wait))
      return poisonRunRows<T, kQuant>(p, k, 0, m);
    if (!pullAwaitFrom<0>(c, threadIdx.x, blockDim.x, m - 1, islandPeer, step, wait))
      return poisonRunRows<T, kQuant>(p, k, s, m);

    // 2. My run's island partial into my X area.
    const char* src[kM];
#pragma unroll
    for (int j = 0; j < kM; ++j)
      src[j] = j < m && j != me
                   ? c.pulls[members[j]] + slot + fusedTwoShotArea(j, me, m) * area_vecs * kVecBytes
                   : nullptr;
    uint4* const xa = box + (m - 1) * area_vecs;
    const size_t own_first = st.first + st.runBegin(me);
    for (size_t i = blockIdx.x; i < st.runLen(me); i += gridDim.x) {
      uint4 x[V];
      loadSlice<V>(p.send, (own_first + i) * hv, 0, hv, x);
      writeIslandPartial<T, kM, V>(src, m, me, i * hv, hv, x, xa);
    }
    bulkPublish<PullPhaseProto<1>>(c, blockDim.x, step);
    if (!pullAwaitFrom<1>(
            c, threadIdx.x, blockDim.x, 1, [&c](int) { return c.partner; }, step, wait))
      return poisonRunRows<T, kQuant>(p, k, s, m);

    // 3. Island 0's partial + island 1's, the residual, the norm; the residual rows into my
    //    result area.
    finishOwnRun<T, kQuant, V>(c, p, slot, box, xa, st, m, me, area_vecs, own_first, hv, g,
                               inv_scale, scratch, parity);
    bulkPublish<PullPhaseProto<2>>(c, blockDim.x, step);
    if (s + 1 == k.nsteps) pdlLaunchDependents();
    if (!pullAwaitFrom<2>(c, threadIdx.x, blockDim.x, m - 1, islandPeer, step, wait))
      return poisonRunRows<T, kQuant>(p, k, s, m);

    // 4. The island's other runs: their owners' residual rows, normalised here.
    normaliseOtherRuns<T, kQuant, V>(c, p, members, slot, st, m, me, area_vecs, hv, g, inv_scale,
                                     scratch, parity);
  }
  session.close(k.nsteps);
}

}  // namespace

// Built per island-size class for the worlds islandWorld serves.
TPCOMM_ONE_PASS_FUSED_SETS(fusedIslandPull, fusedIslandPullKernel, kernelSetByIsland, PullProto)

}  // namespace tpcomm
