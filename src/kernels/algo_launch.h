// Host-side view of the kernels: which kernel serves a (algorithm, datatype, alignment), how big a
// message each can take, and one launch function. Compiles without CUDA device headers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/device_comm.h"
#include "kernels/oneshot_layout.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

constexpr int kThreadsPerBlock = 512;
constexpr int kNumDtypes = 3;  // float32, float16, bfloat16 (see dtypeIndex)

// Kernel entry points by [dtype index]. (Alignment of the user's buffers is a run-time argument:
// a template for it doubled the fat binary for one uniform branch per vector.)
// `lean`: the one-shot's latency-path kernels (oneshot.cu), for the calls oneShotLeanFits takes;
// null for every other algorithm.
struct KernelSet {
  const void* fn[kNumDtypes];
  const void* lean[kNumDtypes] = {};
};

// Kernels are built per world-size class (2, 4, 8 ranks) so per-peer registers fit the class,
// and per transport: peer memory (sentinel protocol) or host memory (LL protocol).
KernelSet oneShotKernels(int world);
KernelSet twoShotKernels(int world);
KernelSet hostOneShotKernels(int world);
KernelSet hostTwoShotKernels(int world);
// One-shot through host memory with the bulk protocol (outboxes, a flag per block and step).
KernelSet hostBulkKernels(int world);
// host_oneshot with the sentinel protocol in host memory (HostSentinelProto; single-step calls).
KernelSet hostSentinelKernels(int world);
// The hierarchical algorithm (peer memory only; even worlds of at least 4, else all zero).
KernelSet islandKernels(int world);
// The kernels of an algorithm (one of the six above); all zero for other algorithms.
KernelSet kernelsOf(int algo, int world);
// Whether tpcomm runs `algo` as its own kernel (one of the six above; not auto, not NCCL).
bool isKernelAlgo(int algo);
constexpr int kWorldClasses[] = {2, 4, 8};

// Bytes one step of the one-shot kernel takes (a peer region of a slot); larger calls take steps.
size_t oneShotStepBytes(const DeviceComm& c);
// Vectors per two-shot step (a chunk), the most the slot layout allows.
size_t twoShotChunkVecs(const DeviceComm& c);
size_t hostTwoShotChunkVecs(const DeviceComm& c);
size_t hostOneShotStepBytes(const DeviceComm& c);
size_t hostBulkStepBytes(const DeviceComm& c);
size_t hostSentinelStepBytes(const DeviceComm& c);
// Vectors per island step (m segments); 0 unless the world is even and at least 4.
size_t islandChunkVecs(const DeviceComm& c);

int dtypeIndex(tpcommDataType_t dt);  // -1 if unsupported
size_t dtypeSize(tpcommDataType_t dt);

struct LaunchArgs {
  int algo;  // a kernel algorithm (oneshot, twoshot, host_oneshot, host_twoshot, island, host_bulk)
  int blocks;
  int threads;
  int push_batch;    // vectors per thread per push round (1..4)
  int push_eighths;  // split one-shot: eighths of a block that push (1..7)
  bool pdl;          // programmatic dependent launch attribute (sm_90+)
  const void* send;
  void* recv;
  size_t count;
  tpcommDataType_t dtype;
  size_t chunk_vecs;  // vectors per step at most: two-shot, island, host_bulk, the one-shot over
                      // peer memory (host_oneshot: 0, a whole slot region)
  bool lean = true;   // the algorithm's latency-path kernel where the call fits it (one-shot)
  bool host_sentinel = false;  // host_oneshot: the sentinel protocol (one step) instead of LL
};

// The geometry a one-shot call (oneshot, host_oneshot or host_bulk) runs with: the region of a
// slot its transport gives a source (or an outbox slot), steps of at most a.chunk_vecs, the grid
// of a. What the kernels read from DeviceComm::call_*; all zero for other algorithms.
OneShotCall oneShotGeometry(const DeviceComm& c, const LaunchArgs& a);

// Whether a one-shot call over peer memory can run the lean kernel: one step (the message fits
// a source's region of a slot, at the step size chunk_vecs), whole 16-byte vectors in aligned
// buffers, and at most one vector per thread of the grid. Pure host arithmetic (CPU-tested).
bool oneShotLeanFits(const DeviceComm& c, const LaunchArgs& a, bool aligned);

tpcommResult_t launchAllReduceKernel(const DeviceComm& c, const LaunchArgs& a, cudaStream_t s);

}  // namespace tpcomm
