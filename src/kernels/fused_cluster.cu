// The fused all-reduce + add + RMSNorm (+ FP8) one-shot with a row spread over a thread-block
// cluster (sm_90+, fused_oneshot.h). One block owning a row moves the row's ~70 KB through one SM,
// latency-bound (docs/BENCHMARKS.md, "Fused epilogue"); here block k of a cluster owns slice k of
// the cluster's rows (rows c, c + clusters, ...): it pushes the slice into every peer's slot,
// sums every rank's vectors of it in rank order in fp32 (the same session, slots and entries as
// fused_oneshot.cu, so ranks running either kernel pair up), adds the residual, and puts its
// slice's sum of squares in its shared memory; after a cluster barrier every block adds the
// cluster's partial sums in block order from distributed shared memory (the same bits in every
// block and on every rank) and normalises its slice. The compile guard keeps the cluster code in
// the sm_90+ images; the planner picks the kernel only where every rank's GPU is sm_90+, and the
// launch refuses it elsewhere.
#include "kernels/fused_device.cuh"
#include "kernels/kernel_set.cuh"
#include "kernels/trace_device.cuh"

namespace tpcomm {
namespace {

// Slices of at most blockDim.x * V vectors (the planner's cluster size sees to it): one pass, the
// slice in registers. Every block of a cluster takes part in every row's barrier, and a call that
// gives up leaves from the same row in every block (a block that left early would leave the others
// at the barrier, which has no deadline): so an abort seen at the start is a failed wait, not a
// return.
template <typename Proto, typename T, int kW, bool kQuant>
__global__ void __launch_bounds__(kThreadsPerBlock)
    fusedClusterKernel(const __grid_constant__ DeviceComm c,
                       const __grid_constant__ FusedParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  KernelTrace trace;
  trace.mark(kTraceEntry);
  constexpr int E = VecTraits<T>::kElems;
  constexpr int V = fusedVecsPerThread(kW);
  __shared__ BlockSumScratch scratch;
  __shared__ SlicePartial partial[2];
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const unsigned cs = cluster.num_blocks();
  const size_t clusters = gridDim.x / cs, first_row = blockIdx.x / cs;
  const size_t H = p.hidden, hv = H / E;
  const size_t slice = (hv + cs - 1) / cs;
  const size_t start = static_cast<size_t>(cluster.block_rank()) * slice;
  const size_t lo = start < hv ? start : hv, hi = lo + slice < hv ? lo + slice : hv;
  const int rank = c.rank, world = c.world;
  char* peer[kW];
  fusedPeers<Proto, kW>(c, rank, world, peer);
  CallSession session(c);

  pdlWait();  // the input (and the residual, gamma, scale) may be the previous kernel's output
  trace.mark(kTraceWaited);
  // The block's slice of its first row (most calls' only one) in registers: input, residual and
  // gamma loads all in flight at once and with the epoch's, none behind a push.
  const size_t regs_hi = first_row < p.rows ? hi : lo;
  uint4 g[V], x[V], res[V];
  loadSlice<V>(p.gamma, 0, lo, hi, g);
  loadSlice<V>(p.send, first_row * hv, lo, regs_hi, x);
  loadSlice<V>(p.residual_in, first_row * hv, lo, regs_hi, res);
  const FusedOpen open = openFused<Proto, T, kW, kQuant>(session, c, p);
  trace.mark(kTraceEpoch);
  const bool aborted = open.aborted;
  const size_t slot_off = open.slot_off;
  if (!aborted) {
    pushSliceRegs<Proto, T, kW, V>(p, peer, slot_off, rank, world, first_row * hv, lo, regs_hi, x);
    pushRowSlices<Proto, T, kW>(p, peer, slot_off, rank, world, hv, first_row + clusters, clusters,
                                lo, hi);
  }
  // Every thread's epoch read has returned before the block is counted in (readEpochThread).
  const bool gone = __syncthreads_or(aborted);
  if (!gone) session.arrive();
  trace.mark(kTracePushed);
  pdlLaunchDependents();
  WaitCtx wait = session.startWaits();
  wait.failed = gone;
  if (open.checker && !gone) session.checkPeers<Proto>(wait, fusedPrint<T, kQuant>(session, p));
  const float inv_scale = kQuant ? 1.f / *p.quant_scale : 0.f;
  unsigned parity = 0;
  for (size_t row = first_row; row < p.rows; row += clusters, parity ^= 1u) {
    const RowCtx r{session,       wait,    reinterpret_cast<uint4*>(peer[0] + slot_off),
                   row * hv + lo, hi - lo, p.rows * H,
                   rank,          world};
    float sumsq = 0.f;
    uint4 y[V];
    if (row != first_row) loadSlice<V>(p.residual_in, row * hv, lo, hi, res);
    residualInRegs<Proto, T, kW, V>(p, r, res, y, sumsq);
    if (row == first_row) trace.markLatest(kTraceReduced, session.epoch, rank);
    // Every thread takes part in the block's and the cluster's sums, a timed-out one too.
    bool failed = false;
    const float part = blockSumFixedOrder(sumsq, scratch, parity, wait.failed, &failed);
    const float total = clusterSumFixedOrder(cluster, partial, parity, part, failed, &failed);
    if (failed) {
      cluster.sync();  // no block leaves while another may still read its partials
      return;
    }
    if (row == first_row) trace.mark(kTraceRowSum);
    const float rs = rsqrtf(total / static_cast<float>(H) + p.eps);
    storeNormRegs<T, kQuant, V>(p, r.base, r.hv, y, g, rs, inv_scale);
    if (row == first_row) trace.mark(kTraceNormStored);
  }
  cluster.sync();  // the last row's partials are read before any block leaves
  session.close(1);
  trace.mark(kTraceEnd);
  trace.store(session.epoch, rank);
#else
  (void)c;  // no clusters below sm_90: never launched there (launchFusedOneShot)
  (void)p;
#endif
}

template <bool kQuant>
struct FusedClusterEntry {
  template <typename Proto, typename T, int kW>
  static const void* get() {
    return reinterpret_cast<const void*>(&fusedClusterKernel<Proto, T, kW, kQuant>);
  }
};

}  // namespace

bool readFusedClusterTrace(int dev, unsigned long long* out) {
  return readUnitTrace(dev, out);
}

KernelSet fusedP2pClusterKernels(int world) {
  return kernelSetByWorld<FusedClusterEntry<false>, SentinelProto>(world);
}
KernelSet fusedP2pClusterFp8Kernels(int world) {
  return kernelSetByWorld<FusedClusterEntry<true>, SentinelProto>(world);
}

}  // namespace tpcomm
