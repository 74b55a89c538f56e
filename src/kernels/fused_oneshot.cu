// The fused all-reduce + add + RMSNorm (+ FP8) one-shot (fused_oneshot.h). Block b owns rows b,
// b + grid, ...: it pushes their vectors into every peer's slot, counts itself in, then for each
// of its rows waits for every rank's vectors, sums them in rank order in fp32 (the one-shot's
// session's sum: the same slots, entries, clears and epoch bookkeeping as the lean one-shot, so the
// protocol's argument in docs/PROTOCOL.md holds as written), adds the residual and normalises the
// row. Single-step calls only (the host checks): a reader's clears then precede its next pushes by
// a kernel boundary.
#include <cstdint>

#include "common/error.h"
#include "kernels/algo_launch.h"
#include "kernels/fused_oneshot.h"
#include "kernels/kernel_set.cuh"
#include "kernels/oneshot_layout.h"  // ringRank
#include "kernels/rmsnorm_device.cuh"
#include "kernels/session_device.cuh"
#include "kernels/variant_table.h"

namespace tpcomm {
namespace {

template <typename T>
__device__ __forceinline__ float lane(const uint4& v, int i) {
  return bitsToFloat<T>(laneBits<T>(v, i));
}

// The norm of one vector y of residual_out (gamma g), stored as T or as e4m3 bytes.
template <typename T, bool kQuant>
__device__ __forceinline__ void storeNorm(const FusedParams& p, size_t v, const uint4& y,
                                          const uint4& g, float rs, float inv_scale) {
  constexpr int E = VecTraits<T>::kElems;
  if constexpr (kQuant) {
    uint32_t lo = 0, hi = 0;
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const float w = p.gemma ? 1.f + lane<T>(g, i) : lane<T>(g, i);
      const uint32_t b = toE4m3(lane<T>(y, i) * rs * w * inv_scale);
      if (i < 4)
        lo |= b << (8 * i);
      else
        hi |= b << (8 * (i - 4));
    }
    uint8_t* out = static_cast<uint8_t*>(p.norm_out) + v * E;
    if constexpr (E == 8)
      *reinterpret_cast<uint2*>(out) = make_uint2(lo, hi);
    else
      *reinterpret_cast<uint32_t*>(out) = lo;
  } else {
    uint4 n = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const float w = p.gemma ? 1.f + lane<T>(g, i) : lane<T>(g, i);
      setLaneBits<T>(n, i, floatToBits<T>(lane<T>(y, i) * rs * w));
    }
    static_cast<uint4*>(p.norm_out)[v] = n;
  }
}

// y = T(sum + r), its squares added to sumsq.
template <typename T>
__device__ __forceinline__ uint4 addResidual(const Acc<T>& acc, const uint4& r, float& sumsq) {
  constexpr int E = VecTraits<T>::kElems;
  uint4 y = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const uint32_t b = floatToBits<T>(acc.f[i] + lane<T>(r, i));
    setLaneBits<T>(y, i, b);
    const float q = bitsToFloat<T>(b);
    sumsq += q * q;
  }
  return y;
}

// Pushes this block's rows (b, b + grid, ...) into every peer's slot, in my region.
template <typename Proto, typename T, int kW>
__device__ __forceinline__ void pushRows(const FusedParams& p, char* const (&peer)[kW],
                                         size_t slot_off, int rank, int world, size_t hv) {
  const uint4* send = static_cast<const uint4*>(p.send);
  for (size_t row = blockIdx.x; row < p.rows; row += gridDim.x)
    for (size_t j = threadIdx.x; j < hv; j += blockDim.x) {
      const size_t v = row * hv + j;
      const uint4 y = canon<T>(send[v]);
#pragma unroll
      for (int q = 1; q < kW; ++q)
        if (q < world)
          Proto::put(reinterpret_cast<uint4*>(peer[q] + slot_off) + rank * p.region + v, y, 0);
    }
}

// What one row's pass over the sums needs: the session and its deadline, my slot, the row.
struct RowCtx {
  CallSession& session;
  WaitCtx& wait;
  uint4* mine;   // my slot of the call
  size_t base;   // the row's first vector
  size_t hv;     // vectors per row
  size_t count;  // elements of the call
  int rank, world;
};

// One-pass path: y[u] = T(sum + residual) for this thread's vectors base + tid + u * blockDim.x
// (residual loaded before the batched waits), stored to residual_out; squares into sumsq.
template <typename Proto, typename T, int kW, int V>
__device__ __forceinline__ void residualInRegs(const FusedParams& p, const RowCtx& r, uint4 (&y)[V],
                                               float& sumsq) {
  const uint4* res_in = static_cast<const uint4*>(p.residual_in);
  uint4 res[V];
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = threadIdx.x + u * blockDim.x;
    res[u] = j < r.hv ? res_in[r.base + j] : make_uint4(0, 0, 0, 0);
  }
  const size_t o = r.base + threadIdx.x;
  r.session.template sum<Proto, T, kW, V>(
      r.wait, r.world, r.rank, [](int s) { return s; }, r.mine, p.region, o, blockDim.x,
      r.base + r.hv, static_cast<const T*>(p.send), o, r.count, r.session.epoch,
      [&](int u, const Acc<T>& acc) { y[u] = addResidual<T>(acc, res[u], sumsq); });
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = threadIdx.x + u * blockDim.x;
    if (j < r.hv && !r.wait.failed) static_cast<uint4*>(p.residual_out)[r.base + j] = y[u];
  }
}

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
#pragma unroll
    for (int u = 0; u < V; ++u) {
      const size_t j = threadIdx.x + u * blockDim.x;
      if (j < hv) storeNorm<T, kQuant>(p, base + j, y[u], g[u], rs, inv_scale);
    }
    return;
  }
  const uint4* res_out = static_cast<const uint4*>(p.residual_out);
  const uint4* gamma = static_cast<const uint4*>(p.gamma);
  for (size_t j = threadIdx.x; j < hv; j += blockDim.x)
    storeNorm<T, kQuant>(p, base + j, res_out[base + j], gamma[j], rs, inv_scale);
}

// Rows of up to blockDim.x * V vectors (fusedVecsPerThread) stay in registers: the residual and
// gamma are loaded before the waits, every vector's wait is batched with the others, and the norm
// is computed from the sums without a second pass over memory. Longer rows take two passes, the
// second over the thread's own residual_out stores.
template <typename Proto, typename T, int kW, bool kQuant>
__global__ void __launch_bounds__(kThreadsPerBlock)
    fusedOneShotKernel(const __grid_constant__ DeviceComm c,
                       const __grid_constant__ FusedParams p) {
  constexpr int E = VecTraits<T>::kElems;
  constexpr int V = fusedVecsPerThread(kW);
  __shared__ float scratch[kThreadsPerBlock / 32 + 1];
  const size_t H = p.hidden, hv = H / E;
  const int rank = c.rank, world = c.world;
  const bool in_regs = hv <= static_cast<size_t>(V) * blockDim.x;
  char* peer[kW];
#pragma unroll
  for (int q = 0; q < kW; ++q)
    peer[q] = q < world ? Proto::bufs(c)[ringRank(rank, q, world)] : nullptr;
  CallSession session(c);

  pdlWait();   // the input (and the residual, gamma, scale) may be the previous kernel's output
  uint4 g[V];  // the same for every row: in flight with the pushes
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = threadIdx.x + u * blockDim.x;
    g[u] = in_regs && j < hv ? static_cast<const uint4*>(p.gamma)[j] : make_uint4(0, 0, 0, 0);
  }
  session.openThread();
  const bool aborted = session.aborted();
  const size_t slot_off = (session.epoch % kNumSlots) * Proto::slotBytes(c);
  // The call's fingerprint goes out before the data (print_device.cuh): a fused call against an
  // all-reduce, or another shape, is an error on both sides.
  constexpr CallKind kKind = kQuant ? kCallFusedFp8 : kCallFused;
  const bool checker = isPrintChecker();
  if (checker && !aborted) session.announce<Proto, kW>(session.print<T>(kKind, p.rows * H));
  if (!aborted) pushRows<Proto, T, kW>(p, peer, slot_off, rank, world, hv);
  // Every thread's epoch read has returned before the block is counted in (readEpochThread).
  if (!session.arriveBlock(aborted)) return;
  pdlLaunchDependents();
  WaitCtx wait = session.startWaits();
  if (checker) session.checkPeers<Proto>(wait, session.print<T>(kKind, p.rows * H));
  const float inv_scale = kQuant ? 1.f / *p.quant_scale : 0.f;
  for (size_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const RowCtx r{session,  wait, reinterpret_cast<uint4*>(peer[0] + slot_off),
                   row * hv, hv,   p.rows * H,
                   rank,     world};
    float sumsq = 0.f;
    uint4 y[V];
    if (in_regs)
      residualInRegs<Proto, T, kW, V>(p, r, y, sumsq);
    else
      residualInMemory<Proto, T, kW>(p, r, sumsq);
    // Every thread takes part in the block sum, a timed-out one too, then the block leaves
    // together: no barrier is left waiting for it.
    const float total = blockSumFixedOrder(sumsq, scratch);
    if (__syncthreads_or(wait.failed)) return;
    const float rs = rsqrtf(total / static_cast<float>(H) + p.eps);
    storeRowNorm<T, kQuant, V>(p, row * hv, hv, in_regs, y, g, rs, inv_scale);
  }
  session.close(1);
}

template <bool kQuant>
struct FusedEntry {
  template <typename Proto, typename T, int kW>
  static const void* get() {
    return reinterpret_cast<const void*>(&fusedOneShotKernel<Proto, T, kW, kQuant>);
  }
};

}  // namespace

KernelSet fusedP2pKernels(int world) {
  return kernelSetByWorld<FusedEntry<false>, SentinelProto>(world);
}
KernelSet fusedP2pFp8Kernels(int world) {
  return kernelSetByWorld<FusedEntry<true>, SentinelProto>(world);
}
KernelSet fusedHostKernels(int world) {
  return kernelSetByWorld<FusedEntry<false>, HostSentinelProto>(world);
}
KernelSet fusedHostFp8Kernels(int world) {
  return kernelSetByWorld<FusedEntry<true>, HostSentinelProto>(world);
}

tpcommResult_t launchFusedOneShot(const DeviceComm& c, const FusedLaunch& f, cudaStream_t s) {
  const void* fn = variantKernel(f.variant, c.world, dtypeIndex(f.dtype));
  if (!fn)
    return fail(tpcommInternalError, "fused launch: no kernel for variant %s",
                tpcommVariantName(f.variant));
  DeviceComm dc = c;
  dc.aligned = 1;  // the planner sends whole-vector rows of aligned buffers only
  FusedParams p = f.p;
  void* args[] = {&dc, &p};
  return launchKernel(fn, f.blocks, f.threads, f.pdl, args, s);
}

}  // namespace tpcomm
