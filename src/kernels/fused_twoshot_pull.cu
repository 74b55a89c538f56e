// The fused all-reduce + add + RMSNorm (+ FP8) two-shot over the pull protocol (fused_oneshot.h):
// for many rows, where the one-shot's every-rank-reads-every-row costs (world - 1) times the call
// in loads per rank, and for calls beyond one step of the one-shot. Each step's rows are split
// into one run per rank (fused_twoshot_layout.h); per step, block b of every rank:
//   1. writes its input of the other ranks' runs (local rows b, b + grid, ...) into its own
//      outbox's areas with local stores, and publishes phase 0 (a flag per block, pull_device.cuh);
//   2. for its rows of its own run, reads every peer's input of them from the peer's outbox, sums
//      every rank's in rank order in fp32, adds the residual (the one rounding of every path,
//      fused_device.cuh), stores residual_out and the same bits into its outbox's reduced area,
//      normalises the row from its registers, and publishes phase 1;
//   3. for its rows of every other run, reads the residual rows from their owner's reduced area,
//      stores them, and normalises them: the same bits, summed by the same threads in the same
//      order, as the owner's, so every rank holds identical outputs.
// Only the residual crosses the fabric twice (world - 1 of world runs each way); the norm is
// computed where it is stored. The residual of a row is its owner's residual_in (tensor-parallel
// ranks hold the same one: tpcomm.h says so). Block b of every rank owns the same local rows of
// every run, so a block's flags cover exactly what its peers' blocks b read, and the steps' slot
// reuse is the two-shot pull's (docs/PROTOCOL.md, "Pull"). Rows that fit the registers only (the
// planner checks, fused_plan.cc).
#include "kernels/device/fused_pull_device.cuh"
#include "kernels/device/kernel_set.cuh"
#include "kernels/fused_oneshot.h"
#include "kernels/layout/fused_twoshot_layout.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

using namespace fused_pull;

template <typename T, int kW, bool kQuant>
__global__ void __launch_bounds__(kThreadsPerBlock)
    fusedTwoShotPullKernel(const __grid_constant__ DeviceComm c,
                           const __grid_constant__ FusedParams p) {
  constexpr int E = VecTraits<T>::kElems;
  constexpr int V = kFusedPullVecs, R = pullBatch<kW>();
  __shared__ BlockSumScratch scratch;
  const size_t hv = p.hidden / E;
  const int rank = c.rank, world = c.world;
  const FusedTwoShotSteps k = fusedTwoShotSteps(p.region, hv, world, p.rows);
  const size_t area_vecs = k.area_rows * hv;
  char* const mine = c.pulls[rank];
  const LaunchParams l = fusedLaunchParams();
  CallSession session(c, l);

  uint4 g[V];
  const RowSplitOpen open = openRowSplit<PullProto, kW, T, kQuant>(session, p, hv, g);
  const bool aborted = open.aborted;
  const float inv_scale = open.inv_scale;
  WaitCtx wait = session.startWaits();
  unsigned parity = 0;
  for (size_t s = 0; s < k.nsteps; ++s) {
    const FusedTwoShotStep st = fusedTwoShotStep(k, s, world, p.rows);
    const unsigned long long step = session.epoch + s;
    const size_t slot = (step % kNumSlots) * c.pull_slot_bytes;
    // 1. My input of every other run into its area of my slot: local stores only.
    uint4* const box = reinterpret_cast<uint4*>(mine + slot);
    if (!aborted)
      for (int q = 1; q < world; ++q) {
        const int d = ringRank(rank, q, world);
        stageRun<T>(p, box + static_cast<size_t>(fusedTwoShotArea(rank, d, world)) * area_vecs,
                    st.first + st.runBegin(d), st.runLen(d), hv);
      }
    // Aborted before this call: every row is poison.
    if (!publishPullStep<T, kQuant>(session, c, p, s, step, aborted, open.checker, wait))
      return poisonRunRows<T, kQuant>(p, k, 0, world);
    if (!pullAwait<0>(c, threadIdx.x, blockDim.x, step, wait))
      return poisonRunRows<T, kQuant>(p, k, s, world);

    // 2. My run: every rank's input summed, the residual added, normalised; the residual rows
    //    into my reduced area.
    const char* src[kW];  // rank r's area holding its input of my run
#pragma unroll
    for (int r = 0; r < kW; ++r)
      src[r] = r < world && r != rank
                   ? c.pulls[r] + slot + fusedTwoShotArea(r, rank, world) * area_vecs * kVecBytes
                   : nullptr;
    uint4* const reduced = box + (world - 1) * area_vecs;
    const size_t own_first = st.first + st.runBegin(rank);
    for (size_t i = blockIdx.x; i < st.runLen(rank); i += gridDim.x, parity ^= 1u) {
      const size_t row = own_first + i;
      uint4 x[V], res[V], y[V];
      loadSlice<V>(p.send, row * hv, 0, hv, x);
      loadSlice<V>(p.residual_in, row * hv, 0, hv, res);
      float sumsq = 0.f;
#pragma unroll
      for (int u0 = 0; u0 < V; u0 += R)
        sumRowPart<false, T, kW, R, V>(c, src, i * hv, hv, u0, 0, step, x, res, wait, y, sumsq);
      finishOwnRow<T, kQuant, V>(p, row, reduced + i * hv, hv, y, sumsq, g, inv_scale, scratch,
                                 parity);
    }
    bulkPublish<PullPhaseProto<1>>(c, blockDim.x, step);
    if (s + 1 == k.nsteps) pdlLaunchDependents();
    if (!pullAwait<1>(c, threadIdx.x, blockDim.x, step, wait))
      return poisonRunRows<T, kQuant>(p, k, s, world);

    // 3. Every other run: its owner's residual rows, normalised here.
    for (int q = 1; q < world; ++q) {
      const int d = ringRank(rank, q, world);
      const uint4* from =
          reinterpret_cast<const uint4*>(c.pulls[d] + slot) + (world - 1) * area_vecs;
      normaliseRun<T, kQuant, V>(p, from, st.first + st.runBegin(d), st.runLen(d), hv, g, inv_scale,
                                 scratch, parity);
    }
  }
  session.close(k.nsteps);
}

}  // namespace

TPCOMM_ONE_PASS_FUSED_SETS(fusedTwoShotPull, fusedTwoShotPullKernel, kernelSetByWorld, PullProto)

}  // namespace tpcomm
