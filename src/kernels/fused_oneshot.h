// The fused all-reduce + residual add + RMSNorm (+ FP8) one-shot (fused_oneshot.cu): host-side
// view. The all-reduce half is the one-shot's (every rank pushes its input into its peers' slots
// and sums every rank's vector from its own, sentinel protocol, one step), and since every rank
// then holds whole rows, the epilogue of add_rmsnorm.h runs in the same kernel on the fp32 sums,
// with no trip through memory and no second launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/add_rmsnorm.h"
#include "kernels/device_comm.h"

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
  int gemma;
};

struct FusedLaunch {
  FusedParams p;
  tpcommDataType_t dtype;
  bool host;  // the sentinel protocol in pinned host memory (HostSentinelProto) instead of P2P
  int blocks;
  int threads;
  bool pdl;
};

// Vectors of a source's region of a slot for the transport: the most one fused call can carry.
size_t fusedRegionVecs(const DeviceComm& c, bool host);

// Whether the fused one-shot takes the call: whole 16-byte vectors per row, 16-byte aligned
// buffers, and the whole message in one step (a source's region). Pure host arithmetic.
bool fusedOneShotFits(const DeviceComm& c, bool host, size_t rows, size_t hidden,
                      tpcommDataType_t dtype, bool aligned);

// Grid of the fused one-shot: a block per row up to `max_blocks` (0: the default cap), and
// threads for a row's vectors (a multiple of 32, at most kThreadsPerBlock).
void fusedOneShotGrid(size_t rows, size_t hidden, tpcommDataType_t dtype, int max_blocks,
                      int* blocks, int* threads);

tpcommResult_t launchFusedOneShot(const DeviceComm& c, const FusedLaunch& f, cudaStream_t s);

}  // namespace tpcomm
