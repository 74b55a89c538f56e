// Device pieces of the fused all-reduce + add + RMSNorm kernels (fused_oneshot.cu: a block per
// row; fused_cluster.cu: a thread-block cluster per row). Both push a row's vectors into every
// peer's slot, sum every rank's vectors in rank order in fp32 through the one-shot's session, add
// the residual and normalise; what differs is which vectors of which rows a block owns (a slice:
// vectors [lo, hi) of a row) and how the row's sum of squares is gathered.
#pragma once

#include <cstdint>

#include "kernels/device/poison_device.cuh"
#include "kernels/device/rmsnorm_device.cuh"
#include "kernels/device/session_device.cuh"
#include "kernels/fused_oneshot.h"
#include "kernels/layout/oneshot_layout.h"  // ringRank

namespace tpcomm {

// Every rank's slots as seen from here, [0] mine, [q] rank (rank + q) % world's: the kernel's
// array (in the session it would stay in memory). ringRank, not `%` (oneshot_lean.cu says why).
template <typename Proto, int kW>
__device__ __forceinline__ void fusedPeers(const DeviceComm& c, int rank, int world,
                                           char* (&peer)[kW]) {
#pragma unroll
  for (int q = 0; q < kW; ++q)
    peer[q] = q < world ? Proto::bufs(c)[ringRank(rank, q, world)] : nullptr;
}

// What a fused kernel knows once it read the call's epoch (per thread: readEpochThread).
struct FusedOpen {
  size_t slot_off;  // the call's slot
  bool aborted;     // the communicator was aborted: push nothing
  bool checker;     // this thread checks the peers' fingerprints (isFusedPrintChecker)
};

// The call's fingerprint (print_device.cuh): a fused call against an all-reduce, or another
// shape, is an error on both sides.
template <typename T, bool kQuant>
__device__ __forceinline__ PrintWords fusedPrint(const CallSession& s, const FusedParams& p) {
  return s.template print<T>(kQuant ? kCallFusedFp8 : kCallFused, p.rows * p.hidden);
}

// The fused kernels' checker: block 0's last thread. In the cluster kernel it is in a warp of its
// own, which carries no data; the pull and row-split kernels check before their first wait; the
// block-per-row one-shot has a block of its own for it instead (fused_oneshot.cu).
__device__ __forceinline__ bool isFusedPrintChecker() {
  return blockIdx.x == 0 && threadIdx.x == blockDim.x - 1;
}

// Reads the epoch and, in the checker, announces the call's fingerprint before the data.
// checks false: a block of its own announces and checks it (fused_oneshot.cu, fusedCheckBlock).
template <typename Proto, typename T, int kW, bool kQuant>
__device__ __forceinline__ FusedOpen openFused(CallSession& s, const DeviceComm& c,
                                               const FusedParams& p, bool checks = true) {
  s.openThread();
  const FusedOpen o{(s.epoch % kNumSlots) * Proto::slotBytes(c), s.aborted(),
                    checks && isFusedPrintChecker()};
  if (o.checker && !o.aborted) s.template announce<Proto, kW>(fusedPrint<T, kQuant>(s, p));
  return o;
}

template <typename T>
__device__ __forceinline__ float lane(const uint4& v, int i) {
  return bitsToFloat<T>(laneBits<T>(v, i));
}

// The norm of one vector y of residual_out (gamma g), stored as T or as e4m3 bytes: the e4m3
// byte of the norm rounded to T, times 1 / scale (normE4m3, rmsnorm_device.cuh).
template <typename T, bool kQuant>
__device__ __forceinline__ void storeNorm(const FusedParams& p, size_t v, const uint4& y,
                                          const uint4& g, float rs, float inv_scale) {
  constexpr int E = VecTraits<T>::kElems;
  if constexpr (kQuant) {
    uint32_t lo = 0, hi = 0;
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const float w = p.weight_offset ? 1.f + lane<T>(g, i) : lane<T>(g, i);
      const uint32_t b = normE4m3<T>(lane<T>(y, i) * rs * w, inv_scale);
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
      const float w = p.weight_offset ? 1.f + lane<T>(g, i) : lane<T>(g, i);
      setLaneBits<T>(n, i, floatToBits<T>(lane<T>(y, i) * rs * w));
    }
    static_cast<uint4*>(p.norm_out)[v] = n;
  }
}

// The failure branch (poison_device.cuh, a call): residual_out and the norm (T, or e4m3 bytes:
// all ones is a NaN in e4m3 too) of rows row, row + row_step, ..., vectors lo, lo + stride, ...
// below hi of each. A row with any vector that was not summed from every rank is poisoned whole:
// its norm depends on every vector of it.
template <typename T, bool kQuant>
__device__ __noinline__ void poisonFused(const FusedParams& p, size_t row, size_t row_step,
                                         size_t lo, size_t stride, size_t hi) {
  constexpr int E = VecTraits<T>::kElems;
  const size_t hv = p.hidden / E;
  for (; row < p.rows; row += row_step) {
    for (size_t v = row * hv + lo; v < row * hv + hi; v += stride) {
      static_cast<uint4*>(p.residual_out)[v] = poisonVec();
      if constexpr (kQuant) {
        uint8_t* out = static_cast<uint8_t*>(p.norm_out) + v * E;
        if constexpr (E == 8)
          *reinterpret_cast<uint2*>(out) = make_uint2(~0u, ~0u);
        else
          *reinterpret_cast<uint32_t*>(out) = ~0u;
      } else {
        static_cast<uint4*>(p.norm_out)[v] = poisonVec();
      }
    }
  }
}

// y = T(T(sum) + r), its squares added to sumsq: the all-reduce's result rounded to T first, as
// the unfused path (the all-reduce's output, then the epilogue kernel) and FlashInfer's fusion
// compute it, so that every path gives the same bits (tpcomm.h, tpcommAllReduceAddRmsNorm).
template <typename T>
__device__ __forceinline__ uint4 addResidual(const Acc<T>& acc, const uint4& r, float& sumsq) {
  constexpr int E = VecTraits<T>::kElems;
  uint4 y = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const float ar = bitsToFloat<T>(floatToBits<T>(acc.f[i]));
    const uint32_t b = floatToBits<T>(ar + lane<T>(r, i));
    setLaneBits<T>(y, i, b);
    const float q = bitsToFloat<T>(b);
    sumsq += q * q;
  }
  return y;
}

// My input's vector v (raw), canonicalised, into every peer's slot of the call, in my region.
template <typename Proto, typename T, int kW>
__device__ __forceinline__ void pushVec(const FusedParams& p, char* const (&peer)[kW],
                                        size_t slot_off, int rank, int world, size_t v,
                                        const uint4& x) {
  const uint4 y = canon<T>(x);
#pragma unroll
  for (int q = 1; q < kW; ++q)
    if (q < world)
      Proto::put(reinterpret_cast<uint4*>(peer[q] + slot_off) + rank * p.region + v, y, 0);
}

// Pushes vectors [lo, hi) of rows row0, row0 + row_step, ... (hv vectors a row) into every peer's
// slot, in my region.
template <typename Proto, typename T, int kW>
__device__ __forceinline__ void pushRowSlices(const FusedParams& p, char* const (&peer)[kW],
                                              size_t slot_off, int rank, int world, size_t hv,
                                              size_t row0, size_t row_step, size_t lo, size_t hi) {
  const uint4* send = static_cast<const uint4*>(p.send);
  for (size_t row = row0; row < p.rows; row += row_step)
    for (size_t j = lo + threadIdx.x; j < hi; j += blockDim.x)
      pushVec<Proto, T, kW>(p, peer, slot_off, rank, world, row * hv + j, send[row * hv + j]);
}

// Pushes one row's slice from registers: x[u] is vector base + lo + tid + u * blockDim.x (below
// base + hi), loaded before the epoch (loadSlice), so no load waits behind a push.
template <typename Proto, typename T, int kW, int V>
__device__ __forceinline__ void pushSliceRegs(const FusedParams& p, char* const (&peer)[kW],
                                              size_t slot_off, int rank, int world, size_t base,
                                              size_t lo, size_t hi, const uint4 (&x)[V]) {
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = lo + threadIdx.x + u * blockDim.x;
    if (j < hi) pushVec<Proto, T, kW>(p, peer, slot_off, rank, world, base + j, x[u]);
  }
}

// What one pass over a row's slice needs: the session and its deadline, my slot, the slice.
struct RowCtx {
  CallSession& session;
  WaitCtx& wait;
  uint4* mine;   // my slot of the call
  size_t base;   // the slice's first vector (in the call)
  size_t hv;     // vectors of the slice
  size_t count;  // elements of the call
  int rank, world;
};

// One-pass path: y[u] = T(sum + res[u]) for this thread's vectors base + tid + u * blockDim.x
// (res: the residual's, loaded by the caller before the waits), stored to residual_out; squares
// into sumsq. before_waits: sumSources (batch_device.cuh).
template <typename Proto, typename T, int kW, int V, typename PreWait = NoPreWait>
__device__ __forceinline__ void residualInRegs(const FusedParams& p, const RowCtx& r,
                                               const uint4 (&res)[V], uint4 (&y)[V], float& sumsq,
                                               PreWait before_waits = {}) {
  const size_t o = r.base + threadIdx.x;
  r.session.template sum<Proto, T, kW, V>(
      r.wait, r.world, r.rank, [](int s) { return s; }, r.mine, p.region, o, blockDim.x,
      r.base + r.hv, static_cast<const T*>(p.send), o, r.count, r.session.epoch,
      [&](int u, const Acc<T>& acc) { y[u] = addResidual<T>(acc, res[u], sumsq); }, before_waits);
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = threadIdx.x + u * blockDim.x;
    if (j < r.hv && !r.wait.failed) static_cast<uint4*>(p.residual_out)[r.base + j] = y[u];
  }
}

// The norms of a slice held in registers (y: its residual_out, g: its gamma), vectors base + tid
// + u * blockDim.x below base + hv.
template <typename T, bool kQuant, int V>
__device__ __forceinline__ void storeNormRegs(const FusedParams& p, size_t base, size_t hv,
                                              const uint4 (&y)[V], const uint4 (&g)[V], float rs,
                                              float inv_scale) {
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = threadIdx.x + u * blockDim.x;
    if (j < hv) storeNorm<T, kQuant>(p, base + j, y[u], g[u], rs, inv_scale);
  }
}

// Vectors base + lo + tid + u * blockDim.x below base + hi of src (zeros past hi): a row's
// slice of the input, the residual or (base 0) gamma, all issued at once, right after
// griddepcontrol.wait, so their latencies overlap each other and the epoch's.
template <int V>
__device__ __forceinline__ void loadSlice(const void* src, size_t base, size_t lo, size_t hi,
                                          uint4 (&x)[V]) {
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = lo + threadIdx.x + u * blockDim.x;
    x[u] = j < hi ? static_cast<const uint4*>(src)[base + j] : make_uint4(0, 0, 0, 0);
  }
}

// The grid's last block of the block-per-row fused one-shots (fused_oneshot.cu over pushes or
// host memory, fused_pull.cu over pull) carries no rows: it announces the call's fingerprint and
// checks the peers' (a warp, every peer at once: checkPeerCallsWarp) beside the row blocks' data
// waits, as the cluster kernel's checker warp does, so the check is on no row's path (in a data
// thread it cost the call time: docs/BENCHMARKS.md, "The numbers behind the defaults in the code").
// A failed check sets the abort flag, which ends the row blocks' waits: they poison their rows.
template <typename Proto, typename T, int kW, bool kQuant>
__device__ __forceinline__ void fusedCheckBlock(CallSession& session, const DeviceComm& c,
                                                const FusedParams& p) {
  pdlWait();  // the previous kernel's epoch
  session.openThread();
  const bool aborted = session.aborted();
  if (threadIdx.x == 0 && !aborted) session.announce<Proto, kW>(fusedPrint<T, kQuant>(session, p));
  if (!session.arriveBlock(aborted)) return;
  if (threadIdx.x < 32) {
    WaitCtx wait = session.startWaits();
    if (!checkPeerCallsWarp<Proto>(c, session.epoch, fusedPrint<T, kQuant>(session, p),
                                   wait.deadline))
      return;  // gave up: no close, as a row block that gave up
  }
  session.close(1);
}

}  // namespace tpcomm
