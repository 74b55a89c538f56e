// The fused all-reduce + add + RMSNorm (+ FP8) one-shot over the pull protocol (fused_oneshot.h):
// what the fabric probe chooses where the switches collapse posted peer writes (docs/TOPOLOGY.md,
// "Push or pull over PCIe"), so that the fused call keeps its one kernel there. Block b owns rows
// b, b + grid, ...: it writes their vectors into this rank's own outbox with local stores, then
// for each row reads every peer's vectors over the fabric with loads, sums every rank's in rank
// order in fp32 (the bits of every all-reduce variant), and runs the epilogue of the push kernel
// (fused_device.cuh) on the sums. Two wires, as the all-reduce has:
//   kLL   the flag in the data (oneshot_pull_ll.cu's LL entries in the LL area): no fence, no flag,
//         a reader polls the entries themselves; calls of at most kPullLLMaxCallBytes.
//   flag  the data plain in the outbox slot, then one flag per block (the flag pull's publish and
//         await, pull_device.cuh): a fence and one more round trip, but every byte moved once.
// The slot rotation, the epoch and why an outbox slot is never rewritten while a peer still reads
// it are the pull one-shot's (docs/PROTOCOL.md, "Pull" and "Pull with the flag in the data"). One
// step, rows that fit the registers (the one-pass path only: the planner checks, fused_plan.cc).
// Where the planner gives it a check block (FusedParams::check_block: the LL wire), the grid's
// last block carries no rows and checks the peers' fingerprints (fusedCheckBlock, as the push
// kernel's); else block 0's last thread checks them between its publish and its await.
#include "kernels/device/fused_pull_device.cuh"
#include "kernels/device/kernel_set.cuh"
#include "kernels/fused_oneshot.h"
#include "kernels/layout/pull_ll_layout.h"  // pullLLAreaOffset, kPullLLSlotBytes
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

using namespace fused_pull;

// My rows (row0, row0 + nb, ...) into my own outbox slot, canonicalised: local stores only. The
// first row's input is the one already in registers (x: loaded before the epoch, so that both were
// in flight together). Takes the kernel's values by reference so that inlining leaves every load
// where the kernel put it.
template <bool kLL, typename T, int V>
__device__ __forceinline__ void stageRows(const FusedParams& p, char* const& mine_area,
                                          const size_t& slot, const size_t& row0,
                                          const unsigned& nb, const size_t& hv,
                                          const uint32_t& flag, const uint4 (&x)[V]) {
  for (size_t row = row0; row < p.rows; row += nb)
#pragma unroll
    for (int u = 0; u < V; ++u) {
      const size_t j = threadIdx.x + u * blockDim.x;
      if (j >= hv) continue;
      const uint4 v = row == row0 ? x[u] : static_cast<const uint4*>(p.send)[row * hv + j];
      put<kLL>(mine_area + slot, row * hv + j, canon<T>(v), flag);
    }
}

// One row's all-reduce: every rank's vectors summed in rank order with the residual added (y, its
// squares added to sumsq), and y stored to residual_out unless this thread gave up waiting (its
// row is then poisoned by the caller). A later row's input and residual are loaded here; the first
// row's were loaded before the epoch (x, res).
template <bool kLL, typename T, int kW, int V>
__device__ __forceinline__ void sumRow(const DeviceComm& c, const FusedParams& p,
                                       const char* const (&src)[kW], const size_t& row,
                                       const size_t& row0, const size_t& hv, const uint32_t& flag,
                                       const unsigned long long& epoch, uint4 (&x)[V],
                                       uint4 (&res)[V], WaitCtx& wait, uint4 (&y)[V],
                                       float& sumsq) {
  constexpr int R = pullBatch<kW>();
  if (row != row0) {
    loadSlice<V>(p.send, row * hv, 0, hv, x);
    loadSlice<V>(p.residual_in, row * hv, 0, hv, res);
  }
#pragma unroll
  for (int u0 = 0; u0 < V; u0 += R)
    sumRowPart<kLL, T, kW, R, V>(c, src, row * hv, hv, u0, flag, epoch, x, res, wait, y, sumsq);
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = threadIdx.x + u * blockDim.x;
    if (j < hv && !wait.failed) static_cast<uint4*>(p.residual_out)[row * hv + j] = y[u];
  }
}

template <bool kLL, typename T, int kW, bool kQuant>
__global__ void __launch_bounds__(kThreadsPerBlock)
    fusedPullKernel(const __grid_constant__ DeviceComm c, const __grid_constant__ FusedParams p) {
  constexpr int E = VecTraits<T>::kElems;
  constexpr int V = kFusedPullVecs;
  __shared__ BlockSumScratch scratch;
  const size_t H = p.hidden, hv = H / E;
  const int world = c.world;
  const size_t area = kLL ? pullLLAreaOffset(c.pull_slot_bytes) : 0;
  const size_t slot_bytes = kLL ? kPullLLSlotBytes : c.pull_slot_bytes;
  char* const mine_area = c.pulls[c.rank] + area;
  const LaunchParams l = fusedLaunchParams();
  CallSession session(c, l);
  // The row blocks; with a check block, all but the last (at least one: launchFusedOneShot checks).
  const bool check_block = p.check_block != 0;
  const unsigned nb = check_block ? gridDim.x - 1 : gridDim.x;
  if (check_block && blockIdx.x == nb)
    return fusedCheckBlock<PullProto, T, kW, kQuant>(session, c, p);

  pdlWait();  // the input (and the residual, gamma, scale) may be the previous kernel's output
  // The block's first row in registers, its loads in flight with the epoch's.
  const size_t row0 = blockIdx.x, hi0 = row0 < p.rows ? hv : 0;
  uint4 g[V], x[V], res[V];
  loadSlice<V>(p.gamma, 0, 0, hv, g);
  loadSlice<V>(p.send, row0 * hv, 0, hi0, x);
  loadSlice<V>(p.residual_in, row0 * hv, 0, hi0, res);
  session.openThread();
  const bool aborted = session.aborted();
  const uint32_t flag = stepFlag(session.epoch);
  const size_t slot = (session.epoch % kNumSlots) * slot_bytes;
  const bool checker = !check_block && isFusedPrintChecker();
  const PrintWords print = fusedPrint<T, kQuant>(session, p);
  if (checker && !aborted) session.announce<PullProto, kW>(print);
  if (!aborted) stageRows<kLL, T, V>(p, mine_area, slot, row0, nb, hv, flag, x);
  // Every thread's epoch read has returned (and, for the flag wire, every store of the block is
  // ordered before thread 0's publish by this barrier) before the block is counted in.
  if (!session.arriveBlock(aborted)) {  // aborted before this call: the block's rows are poison
    poisonFused<T, kQuant>(p, row0, nb, threadIdx.x, blockDim.x, hv);
    return;
  }
  if constexpr (!kLL) publishFlag<PullProto>(c, session.epoch);
  pdlLaunchDependents();
  WaitCtx wait = session.startWaits();
  // The peers' fingerprints before any wait for their data: a peer in another call is an error
  // here, not a timeout (the flag wire's await takes the checker's verdict to the whole block).
  if (checker) session.checkPeers<PullProto>(wait, print);
  if constexpr (!kLL)
    if (!pullAwait<0>(c, threadIdx.x, blockDim.x, session.epoch, wait)) wait.failed = true;
  const char* src[kW];  // every rank's slot of this call, in rank order
#pragma unroll
  for (int r = 0; r < kW; ++r) src[r] = r < world ? c.pulls[r] + area + slot : nullptr;
  const float inv_scale = kQuant ? 1.f / *p.quant_scale : 0.f;
  unsigned parity = 0;
  for (size_t row = row0; row < p.rows; row += nb, parity ^= 1u) {
    float sumsq = 0.f;
    uint4 y[V];
    sumRow<kLL, T, kW, V>(c, p, src, row, row0, hv, flag, session.epoch, x, res, wait, y, sumsq);
    // Every thread takes part in the block sum, a timed-out one too: no barrier is left waiting.
    bool failed = false;
    const float total = blockSumFixedOrder(sumsq, scratch, parity, wait.failed, &failed);
    if (failed) {  // this row and the block's later ones are poison (poisonFused)
      poisonFused<T, kQuant>(p, row, nb, threadIdx.x, blockDim.x, hv);
      return;
    }
    const float rs = rsqrtf(total / static_cast<float>(H) + p.eps);
    storeNormRegs<T, kQuant, V>(p, row * hv, hv, y, g, rs, inv_scale);
  }
  session.close(1);
}

template <bool kLL, bool kQuant>
TPCOMM_KERNEL_ENTRY(FusedPullEntry, fusedPullKernel<kLL, T, kW, kQuant>);

template <bool kLL, bool kQuant>
KernelSet fusedPullSet(int world) {
  return onePassOnly(kernelSetByWorld<FusedPullEntry<kLL, kQuant>, PullProto>(world));
}

}  // namespace

KernelSet fusedPullLLKernels(int world) {
  return fusedPullSet<true, false>(world);
}
KernelSet fusedPullLLFp8Kernels(int world) {
  return fusedPullSet<true, true>(world);
}
KernelSet fusedPullKernels(int world) {
  return fusedPullSet<false, false>(world);
}
KernelSet fusedPullFp8Kernels(int world) {
  return fusedPullSet<false, true>(world);
}

}  // namespace tpcomm
