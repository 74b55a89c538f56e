// Call fingerprints, the device side (docs/PROTOCOL.md, "Calls that disagree"). Ranks that call
// one all-reduce with different counts or datatypes (or an all-reduce against a fused call) lay
// out and read their slots differently: garbage, or a wait for data that never comes. So every
// kernel's checker thread (thread 0 of block 0) writes its call's record (call_print.h) into
// every peer's print array at [epoch % kNumSlots][its rank] once it has the epoch, before its
// first push, and before its own first wait for data reads every peer's record of this epoch
// (bounded by the call's deadline) and compares it with its own. A mismatch aborts the
// communicator as a timeout does, with both calls in the mapped error word (tpcommInvalidUsage);
// a record that never comes is a timeout that says the peer never started the call.
#pragma once

#include "kernels/device/proto_device.cuh"
#include "kernels/device/wait_device.cuh"
#include "kernels/layout/oneshot_layout.h"  // ringRank
#include "kernels/runtime/call_print.h"

namespace tpcomm {

template <typename T>
struct DtypeIndex;  // dtypeIndex (launch.cu) of the kernel's element type
template <>
struct DtypeIndex<float> {
  static constexpr int value = 0;
};
template <>
struct DtypeIndex<__half> {
  static constexpr int value = 1;
};
template <>
struct DtypeIndex<__nv_bfloat16> {
  static constexpr int value = 2;
};

__device__ __forceinline__ bool isPrintChecker() {
  return blockIdx.x == 0 && threadIdx.x == 0;
}

__device__ __forceinline__ uint4 toVec(const PrintWords& w) {
  return make_uint4(w.tag0, w.count_lo, w.tag1, w.meta);
}
__device__ __forceinline__ PrintWords toWords(const uint4& v) {
  return PrintWords{v.x, v.y, v.z, v.w};
}

// Rank r's record of slot `slot` in the print array at `base`.
__device__ __forceinline__ uint4* printEntry(char* base, unsigned long long epoch, int r) {
  return reinterpret_cast<uint4*>(base) + (epoch % kNumSlots) * kMaxRanks + r;
}

// The mismatch reporter. It may override a timeout (the data wait of a call whose geometry
// differed can time out first), never an earlier mismatch; its fields are its own and are written
// before the code, so the host never reads a half-written mismatch.
static __device__ __noinline__ void reportMismatch(const DeviceComm& c, int peer,
                                                   unsigned long long step, PrintWords mine,
                                                   PrintWords theirs) {
  atomicExch(&c.state->abort, 1u);
  HostError* e = c.host_error;
  if (e->code == static_cast<int>(tpcommInvalidUsage)) return;
  const CallPrint m = unpackPrint(mine), t = unpackPrint(theirs);
  e->mismatch_peer = peer;
  e->mismatch_step = static_cast<int>(step);
  e->mine.count = m.count;
  e->mine.dtype = m.dtype;
  e->mine.kind = m.kind;
  e->theirs.count = t.count;
  e->theirs.dtype = t.dtype;
  e->theirs.kind = t.kind;
  __threadfence_system();
  int* code = const_cast<int*>(&e->code);
  for (int old = *code; old == 0 || old == static_cast<int>(tpcommTimeout);) {
    const int got = atomicCAS(code, old, static_cast<int>(tpcommInvalidUsage));
    if (got == old) break;
    old = got;
  }
  __threadfence_system();
}

// The checker's own record, written at [epoch % kNumSlots][my rank] of every peer's array: one
// 16-byte store each, volatile so host memory gets it whole. kW: the kernel's world-size class
// (>= world), so the loop unrolls to the peers there can be.
template <typename Proto, int kW>
__device__ __forceinline__ void announceCall(const DeviceComm& c, unsigned long long epoch,
                                             const PrintWords& rec) {
  const uint4 v = toVec(rec);
  char* const* prints = Proto::prints(c);
#pragma unroll
  for (int p = 1; p < kW; ++p)
    if (p < c.world)
      storeVolatile16(printEntry(prints[ringRank(c.rank, p, c.world)], epoch, c.rank), v);
}

// Reads every peer's record of the call at `epoch` from this rank's array and compares it with
// `mine`. False (reported: a mismatch, or the deadline passed with a record missing) when the
// call must give up. Inline, in the checker's branch: a call here made the kernels keep their
// live values in local memory across it (seen in the lean kernel's SASS); the reporters, on the
// failure paths only, stay out of line.
template <typename Proto>
__device__ __forceinline__ bool checkPeerCalls(const DeviceComm& c, unsigned long long epoch,
                                               PrintWords mine, unsigned long long deadline) {
  WaitCtx ctx{deadline, false};
  char* base = Proto::prints(c)[c.rank];
#pragma unroll 1
  for (int r = 0; r < c.world; ++r) {
    if (r == c.rank) continue;
    const uint4* e = printEntry(base, epoch, r);
    PrintWords w = toWords(loadVolatile(e));
    // A plain spin, without the host protocols' backoff (pollPause): one thread polls, and a
    // sleep of up to a microsecond after the record landed sat on every call's critical path.
    unsigned spins = 0;
    while (!printArrived(w, epoch)) {
      if (!keepWaiting(ctx, spins, c, r, epoch)) {
        // No record from r for this call: r never started a tpcomm kernel for it (dead, stuck,
        // or a call that took another path there, e.g. NCCL for a different size).
        if (c.host_error->code == static_cast<int>(tpcommTimeout))
          c.host_error->never_started = r + 1;
        return false;
      }
      w = toWords(loadVolatile(e));
    }
    if (!printsAgree(w, mine)) {
      reportMismatch(c, r, epoch, mine, w);
      return false;
    }
  }
  return true;
}

// checkPeerCalls by a warp: lane r waits for peer r's record (every peer's at once: one round
// trip, not world - 1 of them in a row) and compares it; only where a record is missing or
// differs does lane 0 walk the peers in order, which reports the first such peer as
// checkPeerCalls does (the abort flag the failure set ends the lanes' waits). Warp-uniform result.
template <typename Proto>
__device__ __forceinline__ bool checkPeerCallsWarp(const DeviceComm& c, unsigned long long epoch,
                                                   PrintWords mine, unsigned long long deadline) {
  const int r = static_cast<int>(threadIdx.x % 32);
  bool ok = true;
  if (r < c.world && r != c.rank) {
    WaitCtx ctx{deadline, false};
    const uint4* e = printEntry(Proto::prints(c)[c.rank], epoch, r);
    PrintWords w = toWords(loadVolatile(e));
    unsigned spins = 0;
    while (!printArrived(w, epoch) && (ok = keepWaiting(ctx, spins, c, r, epoch)))
      w = toWords(loadVolatile(e));
    ok = ok && printsAgree(w, mine);
  }
  if (__all_sync(0xFFFFFFFFu, ok)) return true;
  if (r == 0) ok = checkPeerCalls<Proto>(c, epoch, mine, deadline);
  return __shfl_sync(0xFFFFFFFFu, ok ? 1 : 0, 0) != 0;
}

}  // namespace tpcomm
