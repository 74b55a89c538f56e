// The fused all-reduce + add + RMSNorm (+ FP8) one-shot with a row spread over a thread-block
// cluster (sm_90+, fused_oneshot.h). One block owning a row moves the row's ~70 KB through one SM,
// latency-bound (docs/BENCHMARKS.md, "Fused epilogue"); here block k of a cluster owns slice k of
// the cluster's rows (rows c, c + clusters, ...): it pushes the slice into every peer's slot,
// sums every rank's vectors of it in rank order in fp32 (the same session, slots and entries as
// fused_oneshot.cu, so ranks running either kernel pair up), adds the residual, and hands its
// warps' sums of squares to every block of the cluster; after one cluster barrier every block
// adds the cluster's warp sums in one fixed order (the same bits in every block and on every
// rank) and normalises its slice. The compile guard keeps the cluster code in the sm_90+ images;
// the planner picks the kernel only where every rank's GPU is sm_90+, and the launch refuses it
// elsewhere.
//
// What a row costs beyond the plain one-shot is its warps' sums crossing the cluster, so the
// kernel keeps everything else off that path (the ablations and A/B behind each choice:
// docs/BENCHMARKS.md, "The numbers behind the defaults in the code"):
//   * Each warp's lane 0 sends its warp's sum straight into every block's shared memory with
//     st.async, whose arrival counts on that block's mbarrier (the row's expected bytes): no
//     block barrier, no cluster barrier per row (a barrier's release also waits for the row's
//     stores in flight), no remote loads, and no cluster barrier before the blocks exit (a block
//     waits for every store into its own shared memory, and none touches another's after). The
//     one cluster barrier, which makes every block's mbarriers initialised before any store to
//     them (and every block of the cluster resident, as distributed shared memory requires: a
//     store into a block that had not started was racecheck's finding against the version with
//     a barrier per row), is split: arrival at the kernel's start, wait before the row loop.
//   * The row's global stores (residual_out, the norm, the clears of the entries read) come after
//     the row's sum.
//   * The fingerprint checker is a warp of its own (the launch adds it; the block's other
//     threads carry data), which checks beside the data waits and leaves. In a data warp its spin
//     serialised with its lanes' data waits, and ahead of the block sum it held every block up;
//     a mismatch it finds aborts the communicator (the error word says so),
//     and any data thread still waiting then gives up.
#include <cooperative_groups.h>

#include "kernels/device/fused_device.cuh"
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/trace_device.cuh"

namespace tpcomm {
namespace {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
constexpr int kMaxWarps = kThreadsPerBlock / 32;

__device__ __forceinline__ uint32_t smemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// This block's shared-memory address `a` as block k of the cluster sees it (shared::cluster).
__device__ __forceinline__ uint32_t remoteAddr(uint32_t a, unsigned k) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(k));
  return r;
}
// An 8-byte store into block k's shared memory whose arrival counts its 8 bytes on k's mbarrier.
__device__ __forceinline__ void storeAsync(uint32_t remote, uint32_t remote_bar, uint32_t a,
                                           uint32_t b) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], {%1, %2}, [%3];" ::"r"(
          remote),
      "r"(a), "r"(b), "r"(remote_bar)
      : "memory");
}
__device__ __forceinline__ void mbarInit(uint32_t bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbarExpect(uint32_t bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbarWait(uint32_t bar, unsigned parity) {
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; "
        "selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
}

// One warp's share of the row: its lanes' sum of squares and whether any of them gave up.
struct WarpPartial {
  float sumsq;
  int failed;
};

// The row's sum over every data warp of the cluster, in one fixed order (index block * kMaxWarps
// + warp, lane l taking the indices l, l + 32, ..., then a butterfly): every lane of every warp of
// every block gets the same bits. *failed: whether any warp gave up.
__device__ __forceinline__ float rowTotal(const WarpPartial (&w)[kMaxClusterBlocks * kMaxWarps],
                                          unsigned cs, int dwarps, bool* failed) {
  const int lane = threadIdx.x % 32;
  float total = 0.f;
  int bad = 0;
#pragma unroll
  for (int i = lane; i < kMaxClusterBlocks * kMaxWarps; i += 32) {
    if (static_cast<unsigned>(i / kMaxWarps) < cs && i % kMaxWarps < dwarps) {
      total += w[i].sumsq;
      bad |= w[i].failed;
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    total += __shfl_xor_sync(0xFFFFFFFFu, total, off);
    bad |= __shfl_xor_sync(0xFFFFFFFFu, bad, off);
  }
  *failed = bad != 0;
  return total;
}

// This block's mbarrier initialised, and the block's arrival at the cluster barrier. Every block's
// mbarrier must be initialised before any block stores to it: this arrival, and the wait before the
// first store, long after.
__device__ __forceinline__ void arriveInitialised(unsigned long long& bar) {
  if (threadIdx.x == 0) {
    mbarInit(smemAddr(&bar), 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
}

// This thread's vectors of the block's slice (from d_lo, dthreads apart, below hi) in registers:
// gamma, input and residual loads all in flight at once and with the epoch's, none behind a push.
template <int V>
__device__ __forceinline__ void loadClusterSlice(const FusedParams& p, const size_t& row,
                                                 const size_t& hv, const size_t& d_lo,
                                                 const int& dthreads, const size_t& hi,
                                                 uint4 (&g)[V], uint4 (&x)[V], uint4 (&res)[V]) {
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = d_lo + static_cast<size_t>(u) * dthreads;
    const bool in = j < hi;
    g[u] = in ? static_cast<const uint4*>(p.gamma)[j] : make_uint4(0, 0, 0, 0);
    x[u] = in ? static_cast<const uint4*>(p.send)[row * hv + j] : make_uint4(0, 0, 0, 0);
    res[u] = in ? static_cast<const uint4*>(p.residual_in)[row * hv + j] : make_uint4(0, 0, 0, 0);
  }
}

// The slice's input (x, loaded by loadClusterSlice) into every peer's slot, unless the communicator
// was aborted before this call.
template <typename Proto, typename T, int kW, int V>
__device__ __forceinline__ void pushClusterSlice(const FusedParams& p, char* const (&peer)[kW],
                                                 const size_t& slot_off, const int& rank,
                                                 const int& world, const size_t& row,
                                                 const size_t& hv, const size_t& d_lo,
                                                 const int& dthreads, const size_t& hi,
                                                 const uint4 (&x)[V], const bool& aborted) {
  if (aborted) return;
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = d_lo + static_cast<size_t>(u) * dthreads;
    if (j < hi) pushVec<Proto, T, kW>(p, peer, slot_off, rank, world, row * hv + j, x[u]);
  }
}

// The warp's sum of squares (and whether any of its lanes gave up) to every block of the cluster,
// itself included, each store counted on that block's mbarrier; then the wait on this block's own
// mbarrier until every warp's sum is in: the row's one wait, no block or cluster barrier. Returns
// the row's sum of squares (rowTotal: the same bits in every block); *failed: some warp gave up.
__device__ __forceinline__ float shareWarpSum(WarpPartial (&sums)[kMaxClusterBlocks * kMaxWarps],
                                              unsigned long long& bar, const unsigned& cs,
                                              const unsigned& me, const int& warp,
                                              const int& dwarps, float& sumsq, const WaitCtx& wait,
                                              bool* failed) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) sumsq += __shfl_xor_sync(0xFFFFFFFFu, sumsq, off);
  const int bad = __any_sync(0xFFFFFFFFu, wait.failed) ? 1 : 0;
  const uint32_t b = smemAddr(&bar);
  if (threadIdx.x == 0) mbarExpect(b, cs * static_cast<unsigned>(dwarps) * 8u);
  if (threadIdx.x % 32 == 0) {
    const uint32_t slot = smemAddr(&sums[me * kMaxWarps + warp]);
    for (unsigned k = 0; k < cs; ++k)
      storeAsync(remoteAddr(slot, k), remoteAddr(b, k), __float_as_uint(sumsq),
                 static_cast<uint32_t>(bad));
  }
  mbarWait(b, 0);  // its one phase
  return rowTotal(sums, cs, dwarps, failed);
}

// The slice's residual rows (y) to the output, and their norms (total: the row's sum of squares
// over the cluster, of H elements).
template <typename T, bool kQuant, int V>
__device__ __forceinline__ void storeClusterSlice(const FusedParams& p, const size_t& row,
                                                  const size_t& hv, const size_t& d_lo,
                                                  const int& dthreads, const size_t& hi,
                                                  const uint4 (&y)[V], const uint4 (&g)[V],
                                                  const float& total, const size_t& H,
                                                  const float& inv_scale) {
  const float rs = rsqrtf(total / static_cast<float>(H) + p.eps);
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = d_lo + static_cast<size_t>(u) * dthreads;
    if (j < hi) {
      static_cast<uint4*>(p.residual_out)[row * hv + j] = y[u];
      storeNorm<T, kQuant>(p, row * hv + j, y[u], g[u], rs, inv_scale);
    }
  }
}

#endif  // __CUDA_ARCH__ >= 900

// A cluster per row, every cluster one row (the planner's geometry: a cluster looping over rows
// lost to a block per row; launchFusedOneShot checks the grid), slices of at most
// (blockDim.x - kFusedCheckerThreads) * V vectors: one pass, the slice in registers. Every block of
// the cluster sends its warps' sums, a timed-out or aborted one too (an abort seen at the start is
// a failed wait, not a return: the others would wait for its sums), and the call that gives up
// leaves in every block together.
template <typename Proto, typename T, int kW, bool kQuant>
__global__ void __launch_bounds__(kThreadsPerBlock)
    fusedClusterKernel(const __grid_constant__ DeviceComm c,
                       const __grid_constant__ FusedParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  KernelTrace trace;  // marks kTraceEntry
  constexpr int V = fusedVecsPerThread(kW);
  __shared__ WarpPartial sums[kMaxClusterBlocks * kMaxWarps];  // [block * kMaxWarps + warp]
  __shared__ alignas(8) unsigned long long bar;                // completes once all are in
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const unsigned cs = cluster.num_blocks(), me = cluster.block_rank();
  const size_t row = blockIdx.x / cs;
  const size_t H = p.hidden, hv = H / VecTraits<T>::kElems;
  const size_t slice = (hv + cs - 1) / cs;
  const size_t start = static_cast<size_t>(me) * slice;
  const size_t lo = start < hv ? start : hv, hi = lo + slice < hv ? lo + slice : hv;
  const int dthreads = static_cast<int>(blockDim.x) - kFusedCheckerThreads, dwarps = dthreads / 32;
  const bool data = static_cast<int>(threadIdx.x) < dthreads;
  const int warp = threadIdx.x / 32;
  const int rank = c.rank, world = c.world;
  char* peer[kW];
  fusedPeers<Proto, kW>(c, rank, world, peer);
  const LaunchParams l = fusedLaunchParams();
  CallSession session(c, l);
  // Pins the input's address before the wait (oneshot_lean.cu says why).
  if (data && lo + threadIdx.x < hi)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(static_cast<const uint4*>(p.send) + row * hv +
                                                  lo + threadIdx.x));
  arriveInitialised(bar);  // the mbarrier set before any block's first store to it
  pdlWait();  // the input (and the residual, gamma, scale) may be the previous kernel's output
  trace.mark(kTraceWaited);
  const size_t d_lo = data ? lo + threadIdx.x : hi;  // this thread's first vector
  uint4 g[V], x[V], res[V];
  loadClusterSlice<V>(p, row, hv, d_lo, dthreads, hi, g, x, res);  // before the epoch
  const FusedOpen open = openFused<Proto, T, kW, kQuant>(session, c, p);
  trace.mark(kTraceEpoch);
  pushClusterSlice<Proto, T, kW, V>(p, peer, open.slot_off, rank, world, row, hv, d_lo, dthreads,
                                    hi, x, open.aborted);
  // Every thread's epoch read has returned before the block is counted in (readEpochThread).
  const bool gone = __syncthreads_or(open.aborted);
  if (!gone) session.arrive();
  trace.mark(kTracePushed);
  pdlLaunchDependents();
  WaitCtx wait = session.startWaits();
  wait.failed = gone;
  asm volatile("barrier.cluster.wait.acquire;" ::: "memory");  // every block's mbarrier is set
  // The checker's warp (no data) checks the peers' fingerprints beside the waits and leaves.
  if (!data) {
    if (open.checker && !gone) session.checkPeers<Proto>(wait, fusedPrint<T, kQuant>(session, p));
    return;
  }
  const float inv_scale = kQuant ? 1.f / *p.quant_scale : 0.f;
  uint4* const mine = reinterpret_cast<uint4*>(peer[0] + open.slot_off);
  const size_t o = row * hv + d_lo, o_end = row * hv + hi;
  float sumsq = 0.f;
  uint4 y[V];
  session.template sum<Proto, T, kW, V, false>(
      wait, world, rank, [](int s) { return s; }, mine, p.region, o, dthreads, o_end,
      static_cast<const T*>(p.send), o, p.rows * H, session.epoch,
      [&](int u, const Acc<T>& acc) { y[u] = addResidual<T>(acc, res[u], sumsq); });
  trace.markLatest(kTraceReduced, session.epoch, rank);
  bool failed = false;
  const float total = shareWarpSum(sums, bar, cs, me, warp, dwarps, sumsq, wait, &failed);
  if (failed) {  // every block of the cluster leaves here, its slice of the row poisoned
    poisonFused<T, kQuant>(p, row, p.rows, d_lo, dthreads, hi);
    return;
  }
  trace.mark(kTraceRowSum);
  storeClusterSlice<T, kQuant, V>(p, row, hv, d_lo, dthreads, hi, y, g, total, H, inv_scale);
  clearSources<Proto, kW, V>(c, world, rank, mine, p.region, o, dthreads, o_end);
  trace.mark(kTraceNormStored);
  session.close(1);
  trace.mark(kTraceEnd);
  trace.store(session.epoch, rank);
#else
  (void)c;  // no clusters below sm_90: never launched there (launchFusedOneShot)
  (void)p;
#endif
}

template <bool kQuant>
TPCOMM_KERNEL_ENTRY(FusedClusterEntry, fusedClusterKernel<Proto, T, kW, kQuant>);

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
