// The fused all-reduce + residual add + RMSNorm (+ FP8) one-shot (fused_oneshot.cu): host-side
// view. The all-reduce half is the one-shot's (every rank pushes its input into its peers' slots
// and sums every rank's vector from its own, sentinel protocol, one step), and since every rank
// then holds whole rows, the epilogue of add_rmsnorm.h runs in the same kernel on the fp32 sums,
// with no trip through memory and no second launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/add_rmsnorm.h"
#include "kernels/layout/device_comm.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {

// What the fused kernel receives besides the communicator (plain data: a kernel parameter).
struct FusedParams {
  const void* send;  // this rank's partial sums [rows, hidden]
  const void* residual_in;
  void* residual_out;
  void* norm_out;
  const void* gamma;
  const float* quant_scale;  // null: norm_out has the activation dtype
  size_t rows;
  size_t hidden;
  size_t region;  // vectors of a source's region of a slot
  float eps;
  int weight_offset;  // tpcommRmsNormParams_t::weightOffset: w = 1 + gamma (Gemma)
  // The block-per-row one-shot (fused_oneshot.cu): 1, the grid's last block checks the
  // fingerprints and carries no rows; 0, block 0's last thread checks them (FusedLaunch).
  int check_block;
};

struct FusedLaunch {
  FusedParams p;
  tpcommDataType_t dtype;
  tpcommVariant_t variant;  // one of the tpcommVariantFused* (the variant table has its kernels)
  int blocks;               // planCall (CallPlan::epilogue) gives the grid and p.region
  int threads;
  bool pdl;
  // Blocks per row: above 1, a thread-block cluster of that many owns each row (fused_cluster.cu;
  // peer memory, sm_90+); 1, a block owns each row (fused_oneshot.cu).
  int cluster = 1;
  // A block per row, rows of at most threads * fusedVecsPerThread vectors: the one-pass kernel
  // (KernelSet::one_pass), which has no two-pass path.
  bool one_pass = false;
  int cc_major = 0;  // this rank's GPU (a cluster launch needs 9.0+)
};

// The cluster kernel's last warp is the fingerprint checker's and carries no data: the planner
// adds it to a slice's threads (fused_plan.cc), the kernel strides over the others
// (fused_cluster.cu).
constexpr int kFusedCheckerThreads = 32;

// Vectors of a row (of a cluster block's slice of it) each thread keeps in registers: the input,
// the residual, gamma and the result of each, beside the waits' per-source registers, within the
// 128 registers of a 512-thread block without spilling (more spills to the stack at every world
// class); rows of at most kThreadsPerBlock times this take the one-pass path
// (fused_oneshot.cu), and the cluster kernel takes slices of at most that (fused_cluster.cu has
// no second pass).
constexpr int fusedVecsPerThread(int world_class) {
  return world_class <= 4 ? 2 : 1;
}

// Vectors of a row each thread of the pull fused kernels holds (fused_pull.cu): rows of at most
// kThreadsPerBlock times this (8192 bf16 elements) fuse over pull, at every world class (at 8
// ranks the peers' loads go one vector at a time, so the registers hold).
constexpr int kFusedPullVecs = 2;

// The cluster-per-row kernels over peer memory (fused_cluster.cu), in the `cluster` entries of
// fusedP2p[Fp8]Kernels.
KernelSet fusedP2pClusterKernels(int world);
KernelSet fusedP2pClusterFp8Kernels(int world);

tpcommResult_t launchFusedOneShot(const DeviceComm& c, const FusedLaunch& f, cudaStream_t s);

}  // namespace tpcomm
