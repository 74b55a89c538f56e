// One-shot push all-reduce. Each rank writes its input into a region of every peer's current
// slot, then sums every rank's vector from its own slot in rank order. A message larger than a
// region goes in steps, one slot per step, with pushing and reducing warps running side by side
// (at world 2 this moves the same bytes as two-shot with one wait per step instead of two).
//
// Pushing rather than pulling: PCIe and NVLink writes are posted, reads cost a round trip, and the
// user's buffers need no IPC registration (so CUDA graph capture needs no bookkeeping). Arrival is
// carried by the data (proto_device.cuh): the sentinel scheme of TensorRT-LLM's "Lamport" kernels
// over peer memory, NCCL-style LL packets over host memory. Four slots rotated by step epoch keep
// a rank that runs ahead from writing into a slot its slower peer still reads (docs/PROTOCOL.md).
// Over host memory the bulk protocol (BulkProto) instead writes each rank's data once, into its
// own outbox, and its peers read it there once a flag per block and step says it is complete.
#include "kernels/algo_launch.h"
#include "kernels/batch_device.cuh"
#include "kernels/epoch_device.cuh"
#include "kernels/kernel_set.cuh"
#include "kernels/oneshot_layout.h"  // ringRank
#include "kernels/trace_device.cuh"

namespace tpcomm {
namespace {

template <typename Proto, typename T, int kW>
__global__ void __launch_bounds__(kThreadsPerBlock)
    oneShotKernel(const __grid_constant__ DeviceComm c, const T* send, T* recv, size_t count,
                  size_t /*step_vecs: applied by the host, in c.call_**/) {
  KernelTrace trace;
  trace.mark(kTraceEntry);
  // Everything that depends only on the arguments is written before griddepcontrol.wait
  // (pdlWait, below): the first touch of each line of the parameters misses the constant cache,
  // and those misses then overlap the previous kernel instead of delaying the pushes. The
  // compiler may still move parameter loads behind the wait (it does where nothing before the
  // wait needs them): check a change here with cuobjdump and with and without PDL.
  constexpr int E = VecTraits<T>::kElems;
  constexpr int K = Proto::kEntry;
  const size_t nvec = (count + E - 1) / E;
  // Vectors per source rank and step (a slot holds every source's region, an outbox only ours;
  // the step_vecs knob may shorten steps), steps, and a block's share: computed by the host
  // (oneShotGeometry, launch.cu).
  const size_t region = c.call_region, nsteps = c.call_nsteps, per = c.call_per;
  const int pb = c.push_batch;
  const int rank = c.rank, world = c.world;
  const bool aligned = c.aligned != 0;
  const size_t slot_bytes = Proto::slotBytes(c);
  // peer[p]: the staging (or inbox) base of rank (rank + p) % world; [0] mine. Bulk: [0] is my
  // outbox, and the sources' outboxes are src_base + r * src_stride (in vectors).
  char* peer[kW];
  char* src_base;
  size_t src_stride;
  if constexpr (Proto::kOutbox) {
    src_base = c.hout;
    src_stride = c.out_stride / kVecBytes;
#pragma unroll
    for (int p = 0; p < kW; ++p) peer[p] = p == 0 ? src_base + rank * c.out_stride : nullptr;
  } else {
#pragma unroll
    for (int p = 0; p < kW; ++p) peer[p] = p < world ? Proto::bufs(c)[(rank + p) % world] : nullptr;
    src_base = peer[0];
    src_stride = region;
  }
  RankState* const state = c.state;
  const unsigned long long timeout_ns = c.timeout_ns;

  // This block's share of step s: vectors [first, last) of the message. The share's offsets
  // within a region are the same in every step (per is fixed for the call, even in a shorter last
  // step), so the entries this block reads in step s are the ones the same block of every peer
  // writes in step s+4 (docs/PROTOCOL.md). A per-step share would let a peer's short last step
  // overwrite entries a slower thread of ours still has to read.
  auto share = [&](size_t s, size_t* first, size_t* last) {
    const size_t base = s * region, len = min(region, nvec - base);
    *first = base + min(len, blockIdx.x * per);
    *last = base + min(len, blockIdx.x * per + per);
  };
  // Calls of two or more steps split the block: the first warps push (c.push_eighths of them,
  // plan/grid.h), the others reduce, so the link carries step j while the reduce pass of an
  // earlier step runs (with every thread doing both, every block pushes, then every block
  // reduces, in lockstep, and the link idles during the reduce: about a third of the time at
  // 64 MiB). Single-step calls keep every thread for both (latency).
  const bool split = nsteps >= 2 && blockDim.x >= 64 && blockDim.x % 64 == 0;
  const unsigned np =
      split ? min(blockDim.x - 32, max(32u, blockDim.x * c.push_eighths / 8 / 32 * 32))
            : blockDim.x;  // pushing threads: [0, np)
  const bool pusher = threadIdx.x < np;
  const unsigned tr = split ? threadIdx.x - np : threadIdx.x;  // index among reducing threads
  const unsigned nr = split ? blockDim.x - np : blockDim.x;

  size_t first0, last0;
  share(0, &first0, &last0);

  pdlWait();  // the input may be the previous kernel's output; the epoch is its last write
  trace.mark(kTraceWaited);
  // The first batch is loaded before the epoch, so both are in flight together.
  uint4 x[kPushBatch];
  if (pusher) loadBatch<T>(send, first0 + threadIdx.x, np, last0, count, aligned, pb, x);
  const unsigned long long epoch = readEpoch(state);
  if (epoch == ~0ull) return;  // communicator aborted by an earlier timeout
  trace.mark(kTraceEpoch);
  WaitCtx ctx{globalTimerNs() + timeout_ns, false};

  // Push step s (pushing threads): my vectors into my region of every peer's slot. x holds the
  // first batch of step 0 on entry.
  auto push = [&](size_t s) {
    size_t first, last;
    share(s, &first, &last);
    const uint32_t flag = stepFlag(epoch + s);
    const size_t slot_off = ((epoch + s) % kNumSlots) * slot_bytes;
    const size_t base = s * region;  // message vector v is entry (v - base) of its region
    for (size_t v = first + threadIdx.x; v < last; v += np * pb) {
      if (s > 0 || v != first + threadIdx.x) loadBatch<T>(send, v, np, last, count, aligned, pb, x);
#pragma unroll
      for (int u = 0; u < kPushBatch; ++u) {
        const size_t vv = v + u * np;
        if (u >= pb || vv >= last) continue;
        const uint4 y = canon<T>(x[u]);
        if constexpr (Proto::kOutbox) {
          Proto::put(reinterpret_cast<uint4*>(peer[0] + slot_off) + (vv - base), y, flag);
        } else {
#pragma unroll
          for (int p = 1; p < kW; ++p) {
            if (p >= world) continue;
            uint4* dst = reinterpret_cast<uint4*>(peer[p] + slot_off);
            Proto::put(dst + (rank * region + (vv - base)) * K, y, flag);
          }
        }
      }
    }
    if constexpr (Proto::kOutbox) bulkPublish(c, np, epoch + s);
  };
  // Reduce step s (reducing threads) in rank order from my slot and write the output. False on
  // timeout or abort.
  auto reduce = [&](size_t s) {
    size_t first, last;
    share(s, &first, &last);
    const size_t base = s * region;
    if constexpr (Proto::kOutbox) {
      if (!bulkAwait(c, tr, nr, epoch + s, ctx)) return false;
    }
    uint4* mine = reinterpret_cast<uint4*>(src_base + ((epoch + s) % kNumSlots) * slot_bytes);
    constexpr int R = kW * K <= 4 ? kReduceBatch : 1;  // keeps the peers' entries in registers
    for (size_t v = first + tr; v < last; v += nr * R) {
      uint4 y[R];
      if (!reduceBatch<Proto, T, kW>(c, mine, src_stride, v - base, nr, last - base, send, v, count,
                                     epoch + s, ctx, y))
        return false;
#pragma unroll
      for (int u = 0; u < R; ++u)
        if (v + u * nr < last) storeVec<T>(recv, v + u * nr, count, aligned, y[u]);
    }
    return true;
  };

  bool advance = false;
  if (!split) {
    // Every thread pushes and reduces; step s+1 leaves before step s is reduced (safe with four
    // slots by the same argument, per thread instead of per block).
    push(0);
    trace.mark(kTracePushed);
    advance = arriveEpoch(c);
    for (size_t s = 0; s < nsteps; ++s) {
      if (s + 1 < nsteps) push(s + 1);
      if (s + 1 == nsteps) pdlLaunchDependents();  // after the last push
      if (!reduce(s)) return;  // timed out; no block-wide barrier follows, so returning is safe
      if (s == 0) trace.mark(kTraceReduced);
    }
  } else if (pusher) {
    // Step j goes out once this block's reducers are done with step j-2: the peers' blocks hold
    // the same rule, so a peer's step j lands on entries we read in step j-4 at the latest (four
    // slots; docs/PROTOCOL.md). Barriers 1..4 carry "reduced s", 5..8 "pushed j"; four of each
    // because neither side can be more than three phases ahead of the other.
    for (size_t j = 0; j < nsteps; ++j) {
      if (j >= 2) namedBarrierSync(1 + (j - 2) % 4, blockDim.x);
      push(j);
      namedBarrierArrive(5 + j % 4, blockDim.x);
      if (j == 0) advance = arriveEpoch(c);
    }
    pdlLaunchDependents();
  } else {
    // A reducer starts step s only after this block pushed it: in place, the push reads the
    // input vectors the reduce overwrites. After a timeout it keeps only the barrier schedule,
    // so the pushers finish and the kernel exits.
    bool ok = true;
    for (size_t s = 0; s < nsteps; ++s) {
      namedBarrierSync(5 + s % 4, blockDim.x);
      if (s + 1 == nsteps) pdlLaunchDependents();
      ok = ok && reduce(s);
      if (s + 2 < nsteps) namedBarrierArrive(1 + s % 4, blockDim.x);
    }
  }
  if (advance) advanceEpoch(c, epoch, nsteps);
  trace.mark(kTraceEnd);
  trace.store(epoch);
}

// The latency path: the same call as oneShotKernel when it is one step of whole vectors in
// 16-byte-aligned buffers and every thread has at most one vector (oneShotLeanFits, launch.cu,
// decides; small calls get a thread per vector from planGrid). Same slots, entries, epoch
// bookkeeping and summation order as the general kernel, so a rank running it pairs with a peer
// running the general one; what is gone is the general kernel's code between griddepcontrol.wait
// and the pushes and between the data's arrival and the output: the step and batch loops, the
// tail and unaligned paths, the split. A minimal one-shot in tpcomm-floor ran 1.5 us per call
// where the general kernel ran 2.3 (2x H200, 1 KiB, graphs): that difference was instruction
// latency on the critical path, not the machine.
template <typename Proto, typename T, int kW>
__global__ void __launch_bounds__(kThreadsPerBlock)
    oneShotLeanKernel(const __grid_constant__ DeviceComm c, const T* send, T* recv, size_t count,
                      size_t /*step_vecs: applied by the host, in c.call_**/) {
  KernelTrace trace;
  trace.mark(kTraceEntry);
  constexpr int E = VecTraits<T>::kElems;
  const size_t nvec = count / E;  // whole vectors only (the host checks)
  // The general kernel's geometry, from the host; one step, and per <= blockDim.x (the host
  // checks).
  const size_t region = c.call_region, per = c.call_per;
  const size_t v = blockIdx.x * per + threadIdx.x;
  const bool has = threadIdx.x < per && v < nvec;
  const int rank = c.rank, world = c.world;
  const size_t slot_bytes = Proto::slotBytes(c);
  // ringRank, not `%`: a 32-bit modulo by the run-time world is a chain of ~20 instructions
  // (reciprocal and corrections) before each peer's base can be loaded, on the critical path
  // wherever the launch is not overlapped with the previous kernel (measured: 0.1 us per call
  // without PDL, none with it). The general kernel keeps `%`: with ringRank there, the compiler
  // moved its parameter loads behind griddepcontrol.wait and small calls lost 0.2 us with PDL.
  char* peer[kW];
#pragma unroll
  for (int p = 0; p < kW; ++p)
    peer[p] = p < world ? Proto::bufs(c)[ringRank(rank, p, world)] : nullptr;
  const uint4* in = reinterpret_cast<const uint4*>(send) + v;
  // Pins the input's address (the `send` and `count` parameters' constant loads: a first touch
  // of their line misses the constant cache) before the wait. With nothing before the wait
  // needing them, the compiler moves those loads behind griddepcontrol.wait, onto the critical
  // path (seen in cuobjdump); an L2 prefetch of the input is a memory operation it keeps in
  // place. Safe before the wait: L2 is where the previous kernel's writes land anyway.
  if (has) asm volatile("prefetch.global.L2 [%0];" ::"l"(in));

  pdlWait();
  trace.mark(kTraceWaited);
  const uint4 x = has ? *in : make_uint4(0, 0, 0, 0);
  // Every thread reads the epoch itself, alongside its input: no barrier between the two loads
  // and the push (readEpoch's thread-0 load, shared-memory hand-off and barrier were on the
  // critical path). A thread that sees the communicator aborted pushes nothing, and leaves after
  // the barrier below, as the whole block does then.
  const unsigned long long epoch = readEpochThread(c.state);
  const bool aborted = epoch == ~0ull;
  trace.mark(kTraceEpoch);
  const size_t slot_off = (epoch % kNumSlots) * slot_bytes;
  if (has && !aborted) {
    const uint4 y = canon<T>(x);
#pragma unroll
    for (int p = 1; p < kW; ++p)
      if (p < world)
        Proto::put(reinterpret_cast<uint4*>(peer[p] + slot_off) + rank * region + v, y, 0);
  }
  trace.mark(kTracePushed);
  // Every thread's epoch read has returned (its push, or at least the vote below, used it)
  // before thread 0 counts the block in: the last block's advance can then never be read here
  // (readEpochThread). Off the critical path: the peers' data is an NVLink trip away.
  if (__syncthreads_or(aborted)) return;
  const bool advance = arriveEpoch(c);
  pdlLaunchDependents();
  WaitCtx ctx = makeWaitCtx(c);
  if (has) {
    uint4 y[1];
    uint4* mine = reinterpret_cast<uint4*>(peer[0] + slot_off);
    if (!reduceBatch<Proto, T, kW, 1>(c, mine, region, v, 1, nvec, send, v, count, epoch, ctx, y))
      return;
    reinterpret_cast<uint4*>(recv)[v] = y[0];
  }
  trace.mark(kTraceReduced);
  if (advance) advanceEpoch(c, epoch, 1);
  trace.mark(kTraceEnd);
  trace.store(epoch);
}

struct OneShot {
  template <typename Proto, typename T, int kW>
  static const void* get() {
    return reinterpret_cast<const void*>(&oneShotKernel<Proto, T, kW>);
  }
};
struct OneShotLean {
  template <typename Proto, typename T, int kW>
  static const void* get() {
    return reinterpret_cast<const void*>(&oneShotLeanKernel<Proto, T, kW>);
  }
};

}  // namespace

#ifdef TPCOMM_KERNEL_TRACE
bool readKernelTrace(int dev, unsigned long long* out) {
  return cudaSetDevice(dev) == cudaSuccess &&
         cudaMemcpyFromSymbol(out, g_kernel_trace, sizeof(g_kernel_trace)) == cudaSuccess;
}
#else
bool readKernelTrace(int, unsigned long long*) {
  return false;
}
#endif

KernelSet oneShotKernels(int world) {
  KernelSet set = kernelSetByWorld<OneShot, SentinelProto>(world);
  const KernelSet lean = kernelSetByWorld<OneShotLean, SentinelProto>(world);
  for (int d = 0; d < kNumDtypes; ++d) set.lean[d] = lean.fn[d];
  return set;
}
KernelSet hostOneShotKernels(int world) {
  return kernelSetByWorld<OneShot, LLProto>(world);
}
KernelSet hostSentinelKernels(int world) {
  KernelSet set = kernelSetByWorld<OneShot, HostSentinelProto>(world);
  const KernelSet lean = kernelSetByWorld<OneShotLean, HostSentinelProto>(world);
  for (int d = 0; d < kNumDtypes; ++d) set.lean[d] = lean.fn[d];
  return set;
}
KernelSet hostBulkKernels(int world) {
  return kernelSetByWorld<OneShot, BulkProto>(world);
}

}  // namespace tpcomm
