// The fused all-reduce + add + RMSNorm (+ FP8) one-shot (fused_oneshot.h). Of a grid of n + 1
// blocks, block b < n owns rows b, b + n, ... (the last block checks the call's fingerprints:
// fusedCheckBlock): it pushes their vectors into every peer's slot, counts itself in, then for each
// of its rows waits for every rank's vectors, sums them in rank order in fp32 (the one-shot's
// session's sum: the same slots, entries, clears and epoch bookkeeping as the lean one-shot, so the
// protocol's argument in docs/PROTOCOL.md holds as written), adds the residual and normalises the
// row. Single-step calls only (the host checks): a reader's clears then precede its next pushes by
// a kernel boundary.
#include <cstdint>

#include "common/error.h"
#include "kernels/device/fused_device.cuh"
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/trace_device.cuh"
#include "kernels/fused_oneshot.h"
#include "kernels/runtime/algo_launch.h"
#include "kernels/runtime/variant_table.h"

namespace tpcomm {
namespace {

// Two-pass path (rows longer than the registers hold): vector by vector into residual_out.
template <typename Proto, typename T, int kW>
__device__ __forceinline__ void residualInMemory(const FusedParams& p, const RowCtx& r,
                                                 float& sumsq) {
  const uint4* res_in = static_cast<const uint4*>(p.residual_in);
  for (size_t j = threadIdx.x; j < r.hv && !r.wait.failed; j += blockDim.x) {
    const size_t v = r.base + j;
    const uint4 res = res_in[v];
    uint4 out = make_uint4(0, 0, 0, 0);
    r.session.template sum<Proto, T, kW, 1>(
        r.wait, r.world, r.rank, [](int s) { return s; }, r.mine, p.region, v, 1, v + 1,
        static_cast<const T*>(p.send), v, r.count, r.session.epoch,
        [&](int, const Acc<T>& acc) { out = addResidual<T>(acc, res, sumsq); });
    if (!r.wait.failed) static_cast<uint4*>(p.residual_out)[v] = out;
  }
}

// The row's norm: from the registers (one-pass path) or from residual_out (two-pass path).
template <typename T, bool kQuant, int V>
__device__ __forceinline__ void storeRowNorm(const FusedParams& p, size_t base, size_t hv,
                                             bool in_regs, const uint4 (&y)[V], const uint4 (&g)[V],
                                             float rs, float inv_scale) {
  if (in_regs) {
    storeNormRegs<T, kQuant, V>(p, base, hv, y, g, rs, inv_scale);
    return;
  }
  const uint4* res_out = static_cast<const uint4*>(p.residual_out);
  const uint4* gamma = static_cast<const uint4*>(p.gamma);
  for (size_t j = threadIdx.x; j < hv; j += blockDim.x)
    storeNorm<T, kQuant>(p, base + j, res_out[base + j], gamma[j], rs, inv_scale);
}

// The block's first row (most calls' only one) in registers (none on the two-pass path): its
// input, residual and gamma loads all in flight at once and with the epoch's, none behind a push.
// Takes the kernel's values by reference so that inlining leaves every load where the kernel put
// it (and so for the helpers below).
template <int V>
__device__ __forceinline__ void loadFirstRow(const FusedParams& p, const size_t& row0,
                                             const size_t& hv, const bool& in_regs,
                                             const size_t& regs_hi, uint4 (&g)[V], uint4 (&x)[V],
                                             uint4 (&res)[V]) {
  loadSlice<V>(p.gamma, 0, 0, in_regs ? hv : 0, g);
  loadSlice<V>(p.send, row0 * hv, 0, regs_hi, x);
  loadSlice<V>(p.residual_in, row0 * hv, 0, regs_hi, res);
}

// This block's rows (row0, row0 + nb, ...) pushed into every peer's slot: on the one-pass path the
// first row from the registers (x, loaded before the epoch), the others from memory.
template <typename Proto, typename T, int kW, int V>
__device__ __forceinline__ void pushRows(const FusedParams& p, char* const (&peer)[kW],
                                         const size_t& slot_off, const int& rank, const int& world,
                                         const size_t& hv, const size_t& row0, const unsigned& nb,
                                         const size_t& regs_hi, const bool& in_regs,
                                         const uint4 (&x)[V]) {
  if (in_regs) {
    pushSliceRegs<Proto, T, kW, V>(p, peer, slot_off, rank, world, row0 * hv, 0, regs_hi, x);
    pushRowSlices<Proto, T, kW>(p, peer, slot_off, rank, world, hv, row0 + nb, nb, 0, hv);
  } else {
    pushRowSlices<Proto, T, kW>(p, peer, slot_off, rank, world, hv, row0, nb, 0, hv);
  }
}

// A row's norm from its squares (sumsq) and its residual (y or residual_out). Every thread takes
// part in the block sum, a timed-out one too, so that no barrier is left waiting for it. False:
// some thread of the block gave up; this row and the block's later ones are then poison, and the
// caller poisons them and the block leaves together.
template <typename T, bool kQuant, int V>
__device__ __forceinline__ bool normRow(const FusedParams& p, KernelTrace& trace, const size_t& row,
                                        const size_t& row0, const size_t& hv, const size_t& H,
                                        const bool& in_regs, const uint4 (&y)[V],
                                        const uint4 (&g)[V], const float& sumsq,
                                        BlockSumScratch& scratch, const unsigned& parity,
                                        const bool& timed_out, const float& inv_scale) {
  bool failed = false;
  const float total = blockSumFixedOrder(sumsq, scratch, parity, timed_out, &failed);
  if (failed) return false;
  if (row == row0) trace.mark(kTraceRowSum);
  const float rs = rsqrtf(total / static_cast<float>(H) + p.eps);
  storeRowNorm<T, kQuant, V>(p, row * hv, hv, in_regs, y, g, rs, inv_scale);
  return true;
}

// Rows of up to blockDim.x * V vectors (fusedVecsPerThread) stay in registers: the residual and
// gamma are loaded before the waits, every vector's wait is batched with the others, and the norm
// is computed from the sums without a second pass over memory. Longer rows take two passes, the
// second over the thread's own residual_out stores.
// kOnePass: the host guarantees the rows fit the registers (FusedLaunch::one_pass), and the
// two-pass path is not compiled in: a third of the code, on a path run once per call.
template <typename Proto, typename T, int kW, bool kQuant, bool kOnePass>
__global__ void __launch_bounds__(kThreadsPerBlock)
    fusedOneShotKernel(const __grid_constant__ DeviceComm c,
                       const __grid_constant__ FusedParams p) {
  KernelTrace trace;  // marks kTraceEntry
  constexpr int E = VecTraits<T>::kElems;
  constexpr int V = fusedVecsPerThread(kW);
  __shared__ BlockSumScratch scratch;
  const size_t H = p.hidden, hv = H / E;
  const int rank = c.rank, world = c.world;
  const bool in_regs = kOnePass || hv <= static_cast<size_t>(V) * blockDim.x;
  const LaunchParams l = fusedLaunchParams();
  CallSession session(c, l);
  // The row blocks; with a check block (p.check_block), all but the last (at least one:
  // launchFusedOneShot checks).
  const bool check_block = p.check_block != 0;
  const unsigned nb = check_block ? gridDim.x - 1 : gridDim.x;
  if (check_block && blockIdx.x == nb) return fusedCheckBlock<Proto, T, kW, kQuant>(session, c, p);
  char* peer[kW];
  fusedPeers<Proto, kW>(c, rank, world, peer);

  pdlWait();  // the input (and the residual, gamma, scale) may be the previous kernel's output
  trace.mark(kTraceWaited);
  const size_t row0 = blockIdx.x, regs_hi = in_regs && row0 < p.rows ? hv : 0;
  uint4 g[V], x[V], res[V];
  loadFirstRow<V>(p, row0, hv, in_regs, regs_hi, g, x, res);
  const FusedOpen open = openFused<Proto, T, kW, kQuant>(session, c, p, !check_block);
  trace.mark(kTraceEpoch);
  const bool aborted = open.aborted;
  const size_t slot_off = open.slot_off;
  if (!aborted)
    pushRows<Proto, T, kW, V>(p, peer, slot_off, rank, world, hv, row0, nb, regs_hi, in_regs, x);
  // Every thread's epoch read has returned before the block is counted in (readEpochThread).
  if (!session.arriveBlock(aborted)) {  // aborted before this call: the block's rows are poison
    poisonFused<T, kQuant>(p, row0, nb, threadIdx.x, blockDim.x, hv);
    return;
  }
  trace.mark(kTracePushed);
  pdlLaunchDependents();
  WaitCtx wait = session.startWaits();
  // Without a check block, the checker (block 0's last thread) checks the peers' fingerprints once
  // its own first loads are out (the one-pass path: before_waits), so that the check overlaps
  // them; the two-pass path checks first.
  if (open.checker && !in_regs) session.checkPeers<Proto>(wait, fusedPrint<T, kQuant>(session, p));
  const float inv_scale = kQuant ? 1.f / *p.quant_scale : 0.f;
  unsigned parity = 0;
  for (size_t row = row0; row < p.rows; row += nb, parity ^= 1u) {
    const RowCtx r{session,  wait, reinterpret_cast<uint4*>(peer[0] + slot_off),
                   row * hv, hv,   p.rows * H,
                   rank,     world};
    float sumsq = 0.f;
    uint4 y[V];
    if (in_regs) {
      if (row != row0) loadSlice<V>(p.residual_in, row * hv, 0, hv, res);
      const bool check = open.checker && row == row0;
      residualInRegs<Proto, T, kW, V>(p, r, res, y, sumsq, [&] {
        if (check) session.checkPeers<Proto>(wait, fusedPrint<T, kQuant>(session, p));
      });
    } else {
      residualInMemory<Proto, T, kW>(p, r, sumsq);
    }
    if (row == row0) trace.markLatest(kTraceReduced, session.epoch, rank);
    if (!normRow<T, kQuant, V>(p, trace, row, row0, hv, H, in_regs, y, g, sumsq, scratch, parity,
                               wait.failed, inv_scale)) {  // this row and the later ones: poison
      poisonFused<T, kQuant>(p, row, nb, threadIdx.x, blockDim.x, hv);
      return;
    }
    if (row == row0) trace.mark(kTraceNormStored);
  }
  session.close(1);
  trace.mark(kTraceEnd);
  trace.store(session.epoch, rank);
}

template <bool kQuant, bool kOnePass>
TPCOMM_KERNEL_ENTRY(FusedEntry, fusedOneShotKernel<Proto, T, kW, kQuant, kOnePass>);

// A fused variant's set: the general kernels, the one-pass ones beside them.
template <bool kQuant, typename Proto>
KernelSet fusedSet(int world) {
  KernelSet s = kernelSetByWorld<FusedEntry<kQuant, false>, Proto>(world);
  const KernelSet one = kernelSetByWorld<FusedEntry<kQuant, true>, Proto>(world);
  for (int d = 0; d < kNumDtypes; ++d) s.one_pass[d] = one.fn[d];
  return s;
}

}  // namespace

bool readFusedTrace(int dev, unsigned long long* out) {
  return readUnitTrace(dev, out);
}

// Over peer memory, the cluster kernels (fused_cluster.cu) ride in the same sets: the plan's
// geometry (FusedLaunch::cluster) picks between the two, and the image check and the occupancy
// query see both.
KernelSet fusedP2pKernels(int world) {
  KernelSet s = fusedSet<false, SentinelProto>(world);
  const KernelSet k = fusedP2pClusterKernels(world);
  for (int d = 0; d < kNumDtypes; ++d) s.cluster[d] = k.fn[d];
  return s;
}
KernelSet fusedP2pFp8Kernels(int world) {
  KernelSet s = fusedSet<true, SentinelProto>(world);
  const KernelSet k = fusedP2pClusterFp8Kernels(world);
  for (int d = 0; d < kNumDtypes; ++d) s.cluster[d] = k.fn[d];
  return s;
}
KernelSet fusedHostKernels(int world) {
  return fusedSet<false, HostSentinelProto>(world);
}
KernelSet fusedHostFp8Kernels(int world) {
  return fusedSet<true, HostSentinelProto>(world);
}

tpcommResult_t launchFusedOneShot(const DeviceComm& c, const FusedLaunch& f, cudaStream_t s) {
  const bool cluster = f.cluster > 1;
  const int d = dtypeIndex(f.dtype);
  const void* fn = cluster      ? variantClusterKernel(f.variant, c.world, d)
                   : f.one_pass ? variantOnePassKernel(f.variant, c.world, d)
                                : variantKernel(f.variant, c.world, d);
  if (!fn)
    return fail(tpcommInternalError, "fused launch: no %skernel for variant %s",
                cluster      ? "cluster "
                : f.one_pass ? "one-pass "
                             : "",
                variantRow(f.variant) ? variantRow(f.variant)->name : "?");
  // The cluster kernels carry code only in the sm_90+ images; the planner asks for them only where
  // every rank's GPU launches clusters (CommFacts::clusters), and this says so if it ever did not.
  // The cluster kernel takes one row per cluster (fused_cluster.cu).
  if (cluster && (f.cc_major < 9 || f.cluster > kMaxClusterBlocks || f.blocks % f.cluster != 0 ||
                  static_cast<size_t>(f.blocks / f.cluster) != f.p.rows))
    return fail(tpcommInternalError,
                "fused launch: a cluster of %d blocks (grid %d, %zu rows) on compute capability %d",
                f.cluster, f.blocks, f.p.rows, f.cc_major);
  // A block per row: the grid's last block checks the fingerprints and carries no rows.
  if (f.p.check_block && f.blocks < 2)
    return fail(tpcommInternalError, "fused launch: a grid of %d block(s) has no row block",
                f.blocks);
  // The planner sends whole-vector rows of aligned buffers only (CallSession's defaults).
  FusedParams p = f.p;
  void* args[] = {const_cast<DeviceComm*>(&c), &p};
  return launchKernel(fn, f.blocks, f.threads, f.pdl, args, s, f.cluster);
}

}  // namespace tpcomm
