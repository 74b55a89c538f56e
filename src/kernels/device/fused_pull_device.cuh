// The reads of the fused kernels over pull (fused_pull.cu: the one-shot, both wires;
// fused_twoshot_pull.cu: the two-shot's reduce-scatter, flag wire): a block's row, every peer's
// vectors of it loaded from the peer's outbox, summed with my own in rank order in fp32 (the bits
// of every flat all-reduce variant), the residual added (fused_device.cuh, addResidual). And what
// the kernels that split the rows by owner share (fused_twoshot_pull.cu, fused_island_pull.cu;
// fused_twoshot_layout.h): staging a run, finishing an owned row, normalising an owner's rows.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/device/fused_device.cuh"
#include "kernels/device/pull_device.cuh"
#include "kernels/device/pull_ll_device.cuh"
#include "kernels/fused_oneshot.h"
#include "kernels/layout/fused_twoshot_layout.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace fused_pull {

// What a reader holds of one peer's vector: its LL entry (LLProto::Raw), or the plain vector.
template <bool kLL>
using PeerVec = std::conditional_t<kLL, LLProto::Raw, uint4>;

// My vector v into my own slot: its LL entry (pull_ll_device.cuh), or the plain vector.
template <bool kLL>
__device__ __forceinline__ void put(char* slot, size_t v, const uint4& x, uint32_t flag) {
  if constexpr (kLL) {
    pullLLPut(slot, v, x, flag);
  } else {
    storeVec16(reinterpret_cast<uint4*>(slot) + v, x);
  }
}

template <bool kLL>
__device__ __forceinline__ PeerVec<kLL> fetch(const char* slot, size_t v) {
  if constexpr (kLL) {
    return pullLLLoad(slot, v);
  } else {
    return loadVolatile(reinterpret_cast<const uint4*>(slot) + v);
  }
}

template <bool kLL>
__device__ __forceinline__ bool arrived(const PeerVec<kLL>& e, uint32_t flag) {
  if constexpr (kLL) {
    return LLProto::arrived<float>(e, flag);
  } else {
    return true;  // the block's flag was awaited before the loads (pullAwait)
  }
}

template <bool kLL>
__device__ __forceinline__ uint4 data(const PeerVec<kLL>& e) {
  if constexpr (kLL) {
    return LLProto::data(e);
  } else {
    return e;
  }
}

// Vectors of a row each thread holds (rows of at most blockDim.x * kFusedPullVecs vectors), and
// how many of them have their peers' loads in flight at once: all of them up to 4 ranks, one at
// a time at 8, whose 7 peers' LL halves are 14 registers of 4 words each.
template <int kW>
constexpr int pullBatch() {
  return kW <= 4 ? kFusedPullVecs : 1;
}

// Sums every rank's vectors of one row slice in rank order (my own from x, canonicalised), adds
// the residual and hands y and its squares back: vectors base + tid + u * blockDim.x, u in
// [u0, u0 + R), below base + hv. LL entries are polled until every flag is the step's; a peer
// that never comes is named in the timeout, and the thread gives up (wait.failed).
template <bool kLL, typename T, int kW, int R, int V>
__device__ __forceinline__ void sumRowPart(const DeviceComm& c, const char* const (&src)[kW],
                                           size_t base, size_t hv, int u0, uint32_t flag,
                                           unsigned long long epoch, const uint4 (&x)[V],
                                           const uint4 (&res)[V], WaitCtx& wait, uint4 (&y)[V],
                                           float& sumsq) {
  const int rank = c.rank, world = c.world;
  PeerVec<kLL> e[R][kW];
#pragma unroll
  for (int k = 0; k < R; ++k) {  // every load of the part first...
    const size_t j = threadIdx.x + (u0 + k) * blockDim.x;
#pragma unroll
    for (int r = 0; r < kW; ++r)
      if (j < hv && r < world && r != rank) e[k][r] = fetch<kLL>(src[r], base + j);
  }
  if constexpr (kLL) {  // ...then re-poll only the entries still missing
    unsigned spins = 0;
    while (!wait.failed) {
      int missing = -1;
#pragma unroll
      for (int k = 0; k < R; ++k) {
        const size_t j = threadIdx.x + (u0 + k) * blockDim.x;
#pragma unroll
        for (int r = 0; r < kW; ++r) {
          if (j >= hv || r >= world || r == rank || arrived<kLL>(e[k][r], flag)) continue;
          missing = r;
          e[k][r] = fetch<kLL>(src[r], base + j);
        }
      }
      if (missing < 0 || !keepWaiting(wait, spins, c, missing, epoch)) break;
    }
  }
#pragma unroll
  for (int k = 0; k < R; ++k) {
    const int u = u0 + k;
    if (threadIdx.x + u * blockDim.x >= hv) continue;
    const uint4 own = canon<T>(x[u]);
    Acc<T> acc;  // rank order, fp32: the bits of every all-reduce variant
    acc.set(rank == 0 ? own : data<kLL>(e[k][0]));
#pragma unroll
    for (int r = 1; r < kW; ++r)
      if (r < world) acc.add(r == rank ? own : data<kLL>(e[k][r]));
    y[u] = addResidual<T>(acc, res[u], sumsq);
  }
}

// The failure branch (a call) of the kernels that split rows by owner: every row of this block
// from step `from` on is poison (poisonFused), each of the `parts` owners' runs.
template <typename T, bool kQuant>
__device__ __noinline__ void poisonRunRows(const FusedParams& p, const FusedTwoShotSteps& k,
                                           size_t from, int parts) {
  constexpr int E = VecTraits<T>::kElems;
  const size_t hv = p.hidden / E;
  for (size_t s = from; s < k.nsteps; ++s) {
    const FusedTwoShotStep st = fusedTwoShotStep(k, s, parts, p.rows);
    for (int d = 0; d < parts; ++d) {
      FusedParams q = p;
      q.rows = st.first + st.runBegin(d) + st.runLen(d);  // poisonFused stops at q.rows
      poisonFused<T, kQuant>(q, st.first + st.runBegin(d) + blockIdx.x, gridDim.x, threadIdx.x,
                             blockDim.x, hv);
    }
  }
}

// My input of rows [first, first + len) (this block's: first + blockIdx.x, + gridDim.x, ...) into
// `area` of my own outbox, canonicalised: local stores only.
template <typename T>
__device__ __forceinline__ void stageRun(const FusedParams& p, uint4* area, size_t first,
                                         size_t len, size_t hv) {
  for (size_t i = blockIdx.x; i < len; i += gridDim.x)
    for (size_t j = threadIdx.x; j < hv; j += blockDim.x)
      storeVec16(area + i * hv + j,
                 canon<T>(static_cast<const uint4*>(p.send)[(first + i) * hv + j]));
}

// The squares of a residual row's vectors in registers, in addResidual's order: the owner's sum
// of squares, bit for bit.
template <typename T, int V>
__device__ __forceinline__ float rowSquares(const uint4 (&y)[V], size_t hv) {
  constexpr int E = VecTraits<T>::kElems;
  float sumsq = 0.f;
#pragma unroll
  for (int u = 0; u < V; ++u) {
    if (threadIdx.x + u * blockDim.x >= hv) continue;
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const float q = lane<T>(y[u], i);
      sumsq += q * q;
    }
  }
  return sumsq;
}

// A finished residual row in registers (y; total: the block's sum of its squares) into
// residual_out, and its norm.
template <typename T, bool kQuant, int V>
__device__ __forceinline__ void storeRowAndNorm(const FusedParams& p, size_t row, size_t hv,
                                                const uint4 (&y)[V], const uint4 (&g)[V],
                                                float total, float inv_scale) {
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const size_t j = threadIdx.x + u * blockDim.x;
    if (j < hv) static_cast<uint4*>(p.residual_out)[row * hv + j] = y[u];
  }
  const float rs = rsqrtf(total / static_cast<float>(p.hidden) + p.eps);
  storeNormRegs<T, kQuant, V>(p, row * hv, hv, y, g, rs, inv_scale);
}

// An owned row's residual y (its squares summed in sumsq): the same bits into `reduced` (my
// outbox's area the others read), then into residual_out and normalised from the registers.
template <typename T, bool kQuant, int V>
__device__ __forceinline__ void finishOwnRow(const FusedParams& p, size_t row, uint4* reduced,
                                             size_t hv, const uint4 (&y)[V], float sumsq,
                                             const uint4 (&g)[V], float inv_scale,
                                             BlockSumScratch& scratch, unsigned parity) {
#pragma unroll
  for (int u = 0; u < V; ++u)
    if (threadIdx.x + u * blockDim.x < hv) storeVec16(reduced + threadIdx.x + u * blockDim.x, y[u]);
  bool none = false;  // the waits were the flags': no thread gave up after them
  const float total = blockSumFixedOrder(sumsq, scratch, parity, false, &none);
  storeRowAndNorm<T, kQuant, V>(p, row, hv, y, g, total, inv_scale);
}

// Rows [first, first + len) (this block's) of their owner's finished residual rows at `from`
// (its outbox area, published and awaited): stored, and normalised here by the same threads in
// the same order as the owner did, so every rank holds the owner's bits.
template <typename T, bool kQuant, int V>
__device__ __forceinline__ void normaliseRun(const FusedParams& p, const uint4* from, size_t first,
                                             size_t len, size_t hv, const uint4 (&g)[V],
                                             float inv_scale, BlockSumScratch& scratch,
                                             unsigned& parity) {
  for (size_t i = blockIdx.x; i < len; i += gridDim.x, parity ^= 1u) {
    const size_t row = first + i;
    uint4 y[V];
#pragma unroll
    for (int u = 0; u < V; ++u) {
      const size_t j = threadIdx.x + u * blockDim.x;
      y[u] = j < hv ? loadVolatile(from + i * hv + j) : make_uint4(0, 0, 0, 0);
    }
    bool none = false;
    const float total = blockSumFixedOrder(rowSquares<T, V>(y, hv), scratch, parity, false, &none);
    storeRowAndNorm<T, kQuant, V>(p, row, hv, y, g, total, inv_scale);
  }
}

// The opening of a kernel that splits the rows by owner (the two-shots, the island): the gamma
// row in registers, the call's epoch opened, whether the communicator was aborted before it, and
// the fingerprint checker's announce of the call (kA: the announce's peer bound).
struct RowSplitOpen {
  bool aborted;
  bool checker;     // this thread checks the peers' fingerprints (isFusedPrintChecker)
  float inv_scale;  // FP8 output: 1 / *quant_scale
};
template <typename P, int kA, typename T, bool kQuant, int V>
__device__ __forceinline__ RowSplitOpen openRowSplit(CallSession& session, const FusedParams& p,
                                                     size_t hv, uint4 (&g)[V]) {
  pdlWait();  // the input (and the residual, gamma, scale) may be the previous kernel's output
  loadSlice<V>(p.gamma, 0, 0, hv, g);
  session.openThread();
  const bool aborted = session.aborted();
  const bool checker = isFusedPrintChecker();
  if (checker && !aborted) session.template announce<P, kA>(fusedPrint<T, kQuant>(session, p));
  return RowSplitOpen{aborted, checker, kQuant ? 1.f / *p.quant_scale : 0.f};
}

// A pull kernel's publish of step s (the block's stores to its own slot done). At the first step
// the block is counted in: every thread's epoch read has returned, and every store of the block is
// ordered before thread 0's publish, by arriveBlock's barrier; then the checker checks the peers'
// fingerprints before any wait for their data, so a peer in another call is an error here, not a
// timeout (the await takes the checker's verdict to the whole block). False: the communicator
// was aborted before this call (the caller poisons its rows and returns).
template <typename T, bool kQuant>
__device__ __forceinline__ bool publishPullStep(CallSession& session, const DeviceComm& c,
                                                const FusedParams& p, size_t s,
                                                unsigned long long step, bool aborted, bool checker,
                                                WaitCtx& wait) {
  if (s == 0) {
    if (!session.arriveBlock(aborted)) return false;
    publishFlag<PullProto>(c, step);
    if (checker) session.checkPeers<PullProto>(wait, fusedPrint<T, kQuant>(session, p));
  } else {
    bulkPublish<PullProto>(c, blockDim.x, step);
  }
  return true;
}

// A set of one kernel a row shape (rows in registers: no second pass), each entry also its
// one-pass entry: the launch asks for the one-pass kernel (FusedLaunch::one_pass), the image
// check sees it once.
inline KernelSet onePassOnly(KernelSet s) {
  for (int d = 0; d < kNumDtypes; ++d) s.one_pass[d] = s.fn[d];
  return s;
}

}  // namespace fused_pull
}  // namespace tpcomm

// The kernel sets of a fused kernel template Kernel<T, kW, kQuant> with the one-pass path only:
// NameKernels(world) and NameFp8Kernels(world) (fused_oneshot.h declares them), built per world
// class or island-size class (By: kernelSetByWorld or kernelSetByIsland). At namespace tpcomm
// scope, after the kernel. A macro: a kernel template's address cannot be a template argument.
#define TPCOMM_ONE_PASS_FUSED_SETS(Name, Kernel, By, Proto)               \
  namespace {                                                             \
  template <bool kQuant>                                                  \
  TPCOMM_KERNEL_ENTRY(Name##Entry, Kernel<T, kW, kQuant>);                \
  }                                                                       \
  KernelSet Name##Kernels(int world) {                                    \
    return fused_pull::onePassOnly(By<Name##Entry<false>, Proto>(world)); \
  }                                                                       \
  KernelSet Name##Fp8Kernels(int world) {                                 \
    return fused_pull::onePassOnly(By<Name##Entry<true>, Proto>(world));  \
  }
