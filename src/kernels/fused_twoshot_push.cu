// The fused all-reduce + add + RMSNorm (+ FP8) two-shot over pushes (the sentinel protocol of the
// push all-reduce, proto_device.cuh): the push form of fused_twoshot_pull.cu, for PCIe fabrics
// whose peer stores hold (no write-collapse verdict), where many rows or a call beyond one step
// of the push one-shot would otherwise make every rank push every row to every peer, or run
// unfused. Each step's rows are split into one run per rank (fused_twoshot_layout.h: parts =
// world, areas = 2 * world); per step, block b of every rank:
//   1. pushes its input of every other rank's run into that rank's slot, in its own row of the
//      reduce-scatter (RS) areas;
//   2. for its rows of its own run, waits for every peer's entries (the data says it arrived),
//      sums every rank's in rank order in fp32, adds the residual (the one rounding of every path,
//      fused_device.cuh), normalises from its registers and pushes the residual rows into every
//      peer's slot, in its own row of the all-gather (AG) areas;
//   3. for its rows of every other run, waits for the owner's residual rows in its AG area,
//      stores them and normalises them (the owner's threads, order and bits).
// Readers clear what they read (the sentinel protocol), and each phase's entries are read by the
// writer's same block and thread, so the slots rotate as the push two-shot's do (twoshot.cu;
// docs/PROTOCOL.md, "The fused two-shot over pushes"). Rows that fit the registers only (the
// planner checks, fused_plan.cc).
#include "kernels/device/fused_pull_device.cuh"
#include "kernels/device/kernel_set.cuh"
#include "kernels/fused_oneshot.h"
#include "kernels/layout/fused_twoshot_layout.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

using namespace fused_pull;
using Proto = SentinelProto;

template <typename T, int kW, bool kQuant>
__global__ void __launch_bounds__(kThreadsPerBlock)
    fusedTwoShotPushKernel(const __grid_constant__ DeviceComm c,
                           const __grid_constant__ FusedParams p) {
  constexpr int E = VecTraits<T>::kElems;
  constexpr int V = kFusedPullVecs;
  __shared__ BlockSumScratch scratch;
  const size_t hv = p.hidden / E;
  const int rank = c.rank, world = c.world;
  // p.region: the slot's vectors (the planner's), cut into 2 * world areas.
  const FusedTwoShotSteps k = fusedRunSteps(p.region, hv, world, 2 * world, p.rows);
  const size_t area_vecs = k.area_rows * hv;
  const size_t count = p.rows * p.hidden;
  char* const* slots = Proto::bufs(c);  // every rank's slots, as seen from here
  CallSession session(c);

  uint4 g[V];
  const RowSplitOpen open = openRowSplit<Proto, kW, T, kQuant>(session, p, hv, g);
  const bool aborted = open.aborted;
  const float inv_scale = open.inv_scale;
  WaitCtx wait = session.startWaits();
  unsigned parity = 0;
  for (size_t s = 0; s < k.nsteps; ++s) {
    const FusedTwoShotStep st = fusedTwoShotStep(k, s, world, p.rows);
    const unsigned long long step = session.epoch + s;
    const uint32_t flag = stepFlag(step);
    const size_t slot_off = (step % kNumSlots) * Proto::slotBytes(c);
    // 1. My input of every other run into its owner's RS area, my row.
    if (!aborted)
      for (int q = 1; q < world; ++q) {
        const int d = ringRank(rank, q, world);
        uint4* rs = reinterpret_cast<uint4*>(slots[d] + slot_off) + rank * area_vecs;
        const size_t first = st.first + st.runBegin(d);
        for (size_t i = blockIdx.x; i < st.runLen(d); i += gridDim.x)
          for (size_t j = threadIdx.x; j < hv; j += blockDim.x)
            Proto::put(rs + i * hv + j,
                       canon<T>(static_cast<const uint4*>(p.send)[(first + i) * hv + j]), flag);
      }
    if (s == 0) {
      // Every thread's epoch read has returned before the block is counted in.
      if (!session.arriveBlock(aborted)) {  // aborted before this call: every row is poison
        poisonRunRows<T, kQuant>(p, k, 0, world);
        return;
      }
      // The peers' fingerprints before any wait for their data: a peer in another call is an
      // error here, not a timeout.
      if (open.checker) session.checkPeers<Proto>(wait, fusedPrint<T, kQuant>(session, p));
    }

    // 2. My run: every rank's input summed, the residual added, normalised; the residual rows
    //    pushed into every peer's AG area, my row.
    uint4* const mine = reinterpret_cast<uint4*>(slots[rank] + slot_off);
    const size_t own_first = st.first + st.runBegin(rank);
    for (size_t i = blockIdx.x; i < st.runLen(rank); i += gridDim.x, parity ^= 1u) {
      const size_t row = own_first + i;
      uint4 res[V], y[V];
      loadSlice<V>(p.residual_in, row * hv, 0, hv, res);
      float sumsq = 0.f;
#pragma unroll
      for (int u = 0; u < V; ++u) y[u] = make_uint4(0, 0, 0, 0);
      session.sum<Proto, T, kW, V>(
          wait, world, rank, [](int r) { return r; }, mine, area_vecs, i * hv + threadIdx.x,
          blockDim.x, i * hv + hv, static_cast<const T*>(p.send), row * hv + threadIdx.x, count,
          step,
          [&](int u, const Acc<T>& acc) { y[u] = canon<T>(addResidual<T>(acc, res[u], sumsq)); });
      // Every thread takes part in the block sum, a timed-out one too, then the block leaves
      // together: no barrier is left waiting for it.
      bool failed = false;
      const float total = blockSumFixedOrder(sumsq, scratch, parity, wait.failed, &failed);
      if (failed) {
        poisonRunRows<T, kQuant>(p, k, s, world);
        return;
      }
#pragma unroll
      for (int u = 0; u < V; ++u) {
        const size_t j = threadIdx.x + u * blockDim.x;
        if (j >= hv) continue;
        for (int q = 1; q < world; ++q) {
          const int d = ringRank(rank, q, world);
          Proto::put(reinterpret_cast<uint4*>(slots[d] + slot_off) + (world + rank) * area_vecs +
                         i * hv + j,
                     y[u], flag);
        }
      }
      storeRowAndNorm<T, kQuant, V>(p, row, hv, y, g, total, inv_scale);
    }
    if (s + 1 == k.nsteps) pdlLaunchDependents();

    // 3. Every other run: its owner's residual rows from my AG area, normalised here.
    for (int q = 1; q < world; ++q) {
      const int d = ringRank(rank, q, world);
      uint4* const ag = mine + (world + d) * area_vecs;
      const size_t first = st.first + st.runBegin(d);
      for (size_t i = blockIdx.x; i < st.runLen(d); i += gridDim.x, parity ^= 1u) {
        const size_t row = first + i;
        uint4 y[V];
#pragma unroll
        for (int u = 0; u < V; ++u) {
          const size_t j = threadIdx.x + u * blockDim.x;
          uint4 got[1] = {make_uint4(0, 0, 0, 0)};
          if (j < hv && !wait.failed)
            session.take<Proto, 1>(wait, ag + i * hv + j, flag, d, step, got);
          y[u] = got[0];
        }
        bool failed = false;
        const float total =
            blockSumFixedOrder(rowSquares<T, V>(y, hv), scratch, parity, wait.failed, &failed);
        if (failed) {
          poisonRunRows<T, kQuant>(p, k, s, world);
          return;
        }
        storeRowAndNorm<T, kQuant, V>(p, row, hv, y, g, total, inv_scale);
      }
    }
    afterReads<Proto>(c);
  }
  session.close(k.nsteps);
}

}  // namespace

TPCOMM_ONE_PASS_FUSED_SETS(fusedTwoShotPush, fusedTwoShotPushKernel, kernelSetByWorld, Proto)

}  // namespace tpcomm
