// One-shot all-reduce: every rank's input reaches every rank, which sums all of them in rank
// order. Written once over a protocol session (session_device.cuh): over a push protocol
// (sentinel over peer memory: oneshot; LL or sentinel over host memory: host_oneshot) a rank
// writes its input into its region of every peer's current slot and sums from its own slot; over
// the bulk protocol (host_bulk, bulk_device.cuh) it writes its input once into its own outbox and
// sums from every rank's. A message larger than a region goes in steps, one slot per step, with
// pushing and reducing warps running side by side (at world 2 this moves the same bytes as
// two-shot with one wait per step instead of two). Small aligned one-step calls run the lean
// kernel instead (oneshot_lean.cu). Why four slots rotated by step epoch keep a rank that runs
// ahead from writing into a slot its slower peer still reads: docs/PROTOCOL.md.
//
// Calls of two or more steps split each block: its first warps push (l.push_eighths of them), the
// others reduce, so the link carries step j while the reduce pass of an earlier step runs; with
// every thread doing both, every block pushes, then every block reduces, in lockstep, and the
// link idles during the reduce. Single-step calls keep every thread for both (latency). Why the
// schedule of pushes, reduces and barriers below is safe with four slots: docs/PROTOCOL.md.
//
// Everything that depends only on the arguments is computed before griddepcontrol.wait: the first
// touch of each line of the parameters misses the constant cache, and those misses then overlap
// the previous kernel. The compiler may still move parameter loads behind the wait where nothing
// before it needs them: check a change here with scripts/sass_diff.sh and with and without PDL.
#include "kernels/device/bulk_device.cuh"
#include "kernels/device/kernel_set.cuh"
#include "kernels/device/poison_device.cuh"
#include "kernels/device/pull_device.cuh"
#include "kernels/device/session_device.cuh"
#include "kernels/device/trace_device.cuh"
#include "kernels/lean_kernels.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

// This block's share of step s: vectors [first, last) of the message. The share's offsets within
// a region are the same in every step (per is fixed for the call, even in a shorter last step),
// so the entries this block reads in step s are the ones the same block of every peer writes in
// step s+4 (docs/PROTOCOL.md). A per-step share would let a peer's short last step overwrite
// entries a slower thread of ours still has to read.
struct BlockShare {
  size_t nvec, region, per;  // vectors in the message, per source region and step, per block
  __device__ __forceinline__ void of(size_t s, size_t* first, size_t* last) const {
    const size_t base = s * region, len = min(region, nvec - base);
    *first = base + min(len, blockIdx.x * per);
    *last = base + min(len, blockIdx.x * per + per);
  }
};

// Push step s: my vectors to wherever the protocol sends them (x: step 0's first batch, loaded
// by the kernel before the epoch). Takes the kernel's values by reference so that inlining leaves
// every load where the kernel put it.
template <typename T, typename Session>
__device__ __forceinline__ void pushStep(Session& session, const BlockShare& share, size_t s,
                                         const T* send, const size_t& count, const bool& aligned,
                                         const int& pb, const unsigned& np, const int& rank,
                                         const int& world, const size_t& region,
                                         uint4 (&x)[kPushBatch]) {
  size_t first, last;
  share.of(s, &first, &last);
  const uint32_t flag = session.flag(s);
  const size_t slot_off = session.slotOffset(s);
  const size_t base = s * region;  // message vector v is entry (v - base) of its region
  for (size_t v = first + threadIdx.x; v < last; v += np * pb) {
    if (s > 0 || v != first + threadIdx.x) loadBatch<T>(send, v, np, last, count, aligned, pb, x);
#pragma unroll
    for (int u = 0; u < kPushBatch; ++u) {
      const size_t vv = v + u * np;
      if (u >= pb || vv >= last) continue;
      session.send(flag, slot_off, rank, world, region, vv - base, canon<T>(x[u]));
    }
  }
  session.sent(np, s);
}

// Reduce step s in rank order and write the output (tr of nr reducing threads). False on timeout
// or abort.
template <typename Proto, typename T, int kW, typename Session>
__device__ __forceinline__ bool reduceStep(Session& session, WaitCtx& wait, const BlockShare& share,
                                           size_t s, const T* send, T* recv, const size_t& count,
                                           const bool& aligned, const unsigned& tr,
                                           const unsigned& nr, const size_t& region) {
  size_t first, last;
  share.of(s, &first, &last);
  const size_t base = s * region;
  if (!session.ready(wait, tr, nr, s)) return false;
  uint4* sources = session.sources(s);
  const size_t src_stride = session.sourceStride(region);
  constexpr int K = Session::kEntry;
  constexpr int R = kW * K <= 4 ? kReduceBatch : 1;  // keeps the peers' entries in registers
  for (size_t v = first + tr; v < last; v += nr * R) {
    uint4 y[R];
    if (!session.template reduce<Proto, T, kW>(wait, sources, src_stride, v - base, nr, last - base,
                                               send, v, count, session.epoch + s, y))
      return false;
#pragma unroll
    for (int u = 0; u < R; ++u)
      if (v + u * nr < last) storeVec<T>(recv, v + u * nr, count, aligned, y[u]);
  }
  return true;
}

// The failure branch (poison_device.cuh), a call: reducing thread tr (of nr)'s outputs in steps
// [from, to), the call's geometry recomputed from the kernel's arguments (inlined, the branches
// held values on the success path of the kernels that run near their register limit). In place
// they are inputs too, so a step is poisoned only once this block pushed it, or once no thread
// will push it any more (the kernel is leaving).
template <typename T>
__device__ __noinline__ void poisonOneShot(const LaunchParams& l, T* recv, size_t count,
                                           size_t from, size_t to, unsigned tr, unsigned nr) {
  constexpr int E = VecTraits<T>::kElems;
  const BlockShare share{(count + E - 1) / E, l.call_region, l.call_per};
  for (size_t s = from; s < to; ++s) {
    size_t first, last;
    share.of(s, &first, &last);
    poisonRange<T>(recv, 0, first + tr, last, nr, count, l.aligned);
  }
}

// The three schedules of a call's steps (the kernel below). The step functions are the kernel's
// lambdas, taken by reference so that inlining leaves every load where the kernel put it.
//
// Unsplit: every thread pushes and reduces; step s+1 leaves before step s is reduced. False on a
// timeout, the outputs of the steps left poisoned (no block-wide barrier follows, so the kernel
// may return at once).
template <typename Session, typename Push, typename Reduce, typename Check, typename Poison>
__device__ __forceinline__ bool unsplitSteps(Session& session, KernelTrace& trace, size_t nsteps,
                                             Push& push, Reduce& reduce, Check& checkPeers,
                                             Poison& poison) {
  push(0);
  trace.mark(kTracePushed);
  session.arrive();
  checkPeers();  // a failed check fails this thread's reduce below
  for (size_t s = 0; s < nsteps; ++s) {
    if (s + 1 < nsteps) push(s + 1);
    if (s + 1 == nsteps) pdlLaunchDependents();  // after the last push
    if (!reduce(s)) {
      poison(s, nsteps);
      return false;
    }
    if (s == 0) trace.mark(kTraceReduced);
  }
  return true;
}

// A split block's pushing warps: step j goes out once this block's reducers are done with step
// j-2 (four barriers each way: neither side can be more than three phases ahead of the other).
template <typename Session, typename Push, typename Check>
__device__ __forceinline__ void pushingWarps(Session& session, size_t nsteps, Push& push,
                                             Check& checkPeers) {
  for (size_t j = 0; j < nsteps; ++j) {
    if (j >= 2) namedBarrierSync(kBarReducedFirst + (j - 2) % 4, blockDim.x);
    push(j);
    namedBarrierArrive(kBarPushedFirst + j % 4, blockDim.x);
    if (j == 0) session.arrive();
    if (j == 0) checkPeers();  // before step 1's pushes; a mismatch aborts the reducers
  }
  pdlLaunchDependents();
}

// A split block's reducing warps: a reducer starts step s once this block pushed it (in place,
// the push reads the input the reduce overwrites); after a timeout it keeps only the barrier
// schedule, poisoning each step's outputs once that step is pushed (so in place, no push reads
// the poison).
template <typename Reduce, typename Poison>
__device__ __forceinline__ void reducingWarps(size_t nsteps, Reduce& reduce, Poison& poison) {
  bool ok = true;
  for (size_t s = 0; s < nsteps; ++s) {
    namedBarrierSync(kBarPushedFirst + s % 4, blockDim.x);
    if (s + 1 == nsteps) pdlLaunchDependents();
    if (!ok || !reduce(s)) {
      ok = false;
      poison(s, s + 1);
    }
    if (s + 2 < nsteps) namedBarrierArrive(kBarReducedFirst + s % 4, blockDim.x);
  }
}

// chunk_vecs unused: the host applies the step size, in l.call_*.
template <typename Proto, typename T, int kW>
__global__ void __launch_bounds__(kThreadsPerBlock) oneShotKernel(TPCOMM_ALL_REDUCE_PARAMS(T)) {
  KernelTrace trace;  // marks kTraceEntry
  // Everything that depends only on the arguments comes before griddepcontrol.wait (above).
  constexpr int E = VecTraits<T>::kElems;
  const size_t nvec = (count + E - 1) / E;
  // Vectors per source and step, steps, a block's share: from the host (oneShotGeometry).
  const size_t region = l.call_region, nsteps = l.call_nsteps, per = l.call_per;
  const int pb = l.push_batch;
  const int rank = c.rank, world = c.world;
  const bool aligned = l.aligned != 0;
  char* peer[kW];  // push protocols: the slots' base of rank (rank + p) % world; [0] mine
  typename SessionOf<Proto, kW>::type session(c, l, rank, world, peer);
  const BlockShare share{nvec, region, per};
  // Calls of two or more steps split the block into pushing and reducing warps (above).
  const bool split = nsteps >= 2 && blockDim.x >= 64 && blockDim.x % 64 == 0;
  const unsigned np =
      split ? min(blockDim.x - 32, max(32u, blockDim.x * l.push_eighths / 8 / 32 * 32))
            : blockDim.x;  // pushing threads: [0, np)
  const bool pusher = threadIdx.x < np;
  const unsigned tr = split ? threadIdx.x - np : threadIdx.x;  // index among reducing threads
  const unsigned nr = split ? blockDim.x - np : blockDim.x;

  size_t first0, last0;
  share.of(0, &first0, &last0);
  pdlWait();  // the input may be the previous kernel's output; the epoch is its last write
  trace.mark(kTraceWaited);
  // The first batch is loaded before the epoch, so both are in flight together.
  uint4 x[kPushBatch];
  if (pusher) loadBatch<T>(send, first0 + threadIdx.x, np, last0, count, aligned, pb, x);
  if (!session.open()) {  // communicator aborted by an earlier timeout (pushers own no output)
    if (!(split && pusher)) poisonOneShot<T>(l, recv, count, 0, nsteps, tr, nr);
    return;
  }
  trace.mark(kTraceEpoch);
  // The call's fingerprint: out before the first push, the peers' checked before the first wait
  // for data (print_device.cuh).
  const bool checker = isPrintChecker();
  if (checker)
    session.template announce<Proto, kW>(session.template print<T>(kCallAllReduce, count));
  WaitCtx wait = session.startWaits();
  auto checkPeers = [&] {
    if (checker)
      session.template checkPeers<Proto>(wait, session.template print<T>(kCallAllReduce, count));
  };
  auto push = [&](size_t s) {
    pushStep<T>(session, share, s, send, count, aligned, pb, np, rank, world, region, x);
  };
  auto reduce = [&](size_t s) {
    return reduceStep<Proto, T, kW>(session, wait, share, s, send, recv, count, aligned, tr, nr,
                                    region);
  };

  auto poison = [&](size_t from, size_t to) { poisonOneShot<T>(l, recv, count, from, to, tr, nr); };

  if (!split) {
    if (!unsplitSteps(session, trace, nsteps, push, reduce, checkPeers, poison)) return;
  } else if (pusher) {
    pushingWarps(session, nsteps, push, checkPeers);
  } else {
    reducingWarps(nsteps, reduce, poison);
  }
  session.close(nsteps);
  trace.mark(kTraceEnd);
  trace.store(session.epoch, rank);
}

TPCOMM_KERNEL_ENTRY(OneShot, oneShotKernel<Proto, T, kW>);

// A protocol's general kernels with the lean ones beside them.
KernelSet withLean(KernelSet set, const KernelSet& lean) {
  for (int d = 0; d < kNumDtypes; ++d) set.lean[d] = lean.fn[d];
  return set;
}

}  // namespace

bool readOneShotTrace(int dev, unsigned long long* out) {
  return readUnitTrace(dev, out);
}

KernelSet oneShotKernels(int world) {
  return withLean(kernelSetByWorld<OneShot, SentinelProto>(world), leanOneShotKernels(world));
}
KernelSet hostOneShotKernels(int world) {
  return kernelSetByWorld<OneShot, LLProto>(world);
}
KernelSet hostSentinelKernels(int world) {
  return withLean(kernelSetByWorld<OneShot, HostSentinelProto>(world),
                  leanHostSentinelKernels(world));
}
KernelSet hostBulkKernels(int world) {
  return kernelSetByWorld<OneShot, BulkProto>(world);
}
// The same kernel over the pull protocol (oneshot_pull, pull_device.cuh): as over bulk, a rank
// writes its own outbox, here in its device memory, and reads its peers' over the fabric.
KernelSet pullOneShotKernels(int world) {
  return withLean(kernelSetByWorld<OneShot, PullProto>(world), leanPullOneShotKernels(world));
}

}  // namespace tpcomm
