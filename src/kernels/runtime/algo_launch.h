// Host-side view of the kernels: a kernel set (what a variant's getter returns; the getters are
// declared beside the rows that name them, kernels/runtime/variant_table.cc), what one step of each
// transport's slot layout holds, and the launch of a planned call (src/plan/planner.h decides
// everything; the launch looks the variant up in the variant table,
// kernels/runtime/variant_table.h). Compiles without CUDA device headers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/layout/device_comm.h"
#include "kernels/layout/oneshot_layout.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

constexpr int kThreadsPerBlock = 512;
// The largest thread-block cluster tpcomm launches (sm_90+: a row of the fused call or of the
// epilogue kernel): the portable size (a larger one needs the non-portable attribute, which not
// every sm_90+ part grants).
constexpr int kMaxClusterBlocks = 8;
constexpr int kNumDtypes = 3;  // float32, float16, bfloat16 (see dtypeIndex)

// Kernel entry points by [dtype index]. (Alignment of the user's buffers is a run-time argument:
// a template for it doubled the fat binary for one uniform branch per vector.)
// `lean`: the one-shot's latency-path kernels (oneshot.cu), for the calls the planner gives a lean
// variant; null for every other algorithm.
// `cluster`: the fused one-shot's cluster-per-row kernels (fused_cluster.cu, code in the sm_90+
// images only), for the fused calls the planner gives a cluster geometry; null elsewhere.
// `one_pass`: the fused one-shot's block-per-row kernels without the two-pass path (rows that fit
// the registers: FusedLaunch::one_pass), a third of the general kernel's code; null elsewhere.
struct KernelSet {
  const void* fn[kNumDtypes];
  const void* lean[kNumDtypes] = {};
  const void* cluster[kNumDtypes] = {};
  const void* one_pass[kNumDtypes] = {};
};

constexpr int kWorldClasses[] = {2, 4, 8};

// What one step of each algorithm's slot layout holds, as the kernels lay slots out
// (proto_device.cuh, island.cu): computed once per communicator (init) from its DeviceComm; the
// host-memory rows are 0 where that transport is not set up.
struct SlotCapacity {
  size_t oneshot_step_bytes = 0;        // a source's region of a peer-memory slot
  size_t twoshot_chunk_vecs = 0;        // vectors per two-shot step
  size_t island_chunk_vecs = 0;         // vectors per island step (0 unless islandWorld)
  size_t host_step_bytes = 0;           // a source's region of a host LL slot
  size_t host_sentinel_step_bytes = 0;  // the same with the host sentinel protocol (one step only)
  size_t host_chunk_vecs = 0;           // vectors per host two-shot step
  size_t bulk_step_bytes = 0;           // an outbox slot of host_bulk
  size_t host_pull_chunk_vecs = 0;      // vectors per step of the pull two-shot over host outboxes
                                        // (the quantized wire's host form)
  size_t pull_step_bytes = 0;           // a pull outbox slot (oneshot_pull)
  size_t pull_chunk_vecs = 0;           // vectors per twoshot_pull step
  size_t pull_ll_step_bytes = 0;        // the largest call a pull LL slot holds
  size_t island_pull_chunk_vecs = 0;    // vectors per island_pull step (0 unless islandWorld)
  size_t ce_step_bytes = 0;             // a source's region of a CE landing slot (0: no CE area)
};
SlotCapacity slotCapacity(const DeviceComm& c);  // every row (launch.cu: one function a row)

int dtypeIndex(tpcommDataType_t dt);  // -1 if unsupported
size_t dtypeSize(tpcommDataType_t dt);

// One planned kernel call (src/plan/planner.h: CallPlan), as the launch needs it.
struct LaunchArgs {
  tpcommVariant_t variant;  // which kernel (a row of the variant table)
  int blocks;
  int threads;           // as launched (CallPlan::threads)
  int push_batch;        // vectors per thread per push round (1..4)
  int push_eighths;      // split one-shot: eighths of a block that push (1..7)
  bool pdl;              // programmatic dependent launch attribute (sm_90+)
  bool aligned;          // send and recv are 16-byte aligned
  size_t chunk_vecs;     // vectors per step at most (host LL one-shot: 0, a whole slot region)
  OneShotCall geometry;  // one-shot variants: what the kernels read from LaunchParams::call_*
  const void* send;
  void* recv;
  size_t count;
  tpcommDataType_t dtype;
};

// Launches `fn` (grid and block sizes, the programmatic-dependent-launch attribute where asked,
// thread-block clusters of `cluster` blocks where above 1) with its parameter array: the one
// launch call of every tpcomm kernel.
tpcommResult_t launchKernel(const void* fn, int blocks, int threads, bool pdl, void** args,
                            cudaStream_t s, int cluster = 1);
// The kernel's LaunchParams argument of a launch (device_comm.h).
LaunchParams launchParamsOf(const LaunchArgs& a);
tpcommResult_t launchAllReduceKernel(const DeviceComm& c, const LaunchArgs& a, cudaStream_t s);

}  // namespace tpcomm
