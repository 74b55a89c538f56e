// A fused call on a rank whose buffers are not all 16-byte aligned. The fused plan is made from
// facts every rank shares (the shapes, the communicator), never from one rank's pointers: the
// ranks' kernels pair up only if all of them take the fused kernel. A rank with an unaligned
// buffer runs the same kernel on aligned copies in a scratch area of its own (copies on its
// stream: inputs before, outputs after), so its peers never see the difference and every rank
// gets the same bits. Only that rank pays the copies; aligned calls take none of this.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "tpcomm/tpcomm.h"

struct tpcommComm;

namespace tpcomm {

// The five buffers of a fused call, as the kernel reads and writes them.
struct FusedBuffers {
  const void* input;
  const void* residual_in;
  void* residual_out;
  void* norm_out;
  const void* gamma;
};

// Where each buffer that needs a stand-in goes in the scratch area (offsets in bytes, each
// 256-byte aligned; -1: the buffer is used as it is), and the area's size.
struct StagingLayout {
  long long input = -1, residual_in = -1, residual_out = -1, norm_out = -1, gamma = -1;
  size_t bytes = 0;
  bool any() const { return bytes > 0; }
};

// Pure: which buffers are unaligned and where their stand-ins go. payload: tokens x hidden x the
// element size; norm_bytes: the norm's output (payload, or tokens x hidden for FP8).
StagingLayout stagingLayout(const FusedBuffers& b, size_t payload, size_t norm_bytes,
                            size_t gamma_bytes);

// Copies the unaligned inputs into the communicator's scratch (grown as needed; allocated with
// the capture mode relaxed, so it works under CUDA graph capture) on stream s, and points *k at
// the stand-ins.
tpcommResult_t stageFusedInputs(tpcommComm* c, const StagingLayout& l, const FusedBuffers& user,
                                size_t payload, size_t gamma_bytes, cudaStream_t s,
                                FusedBuffers* k);

// After the kernel: copies the stand-in outputs back into the user's buffers on stream s.
tpcommResult_t unstageFusedOutputs(const StagingLayout& l, const FusedBuffers& user,
                                   const FusedBuffers& k, size_t payload, size_t norm_bytes,
                                   cudaStream_t s);

// Frees the scratch (destroyComm).
void releaseFusedScratch(tpcommComm* c);

}  // namespace tpcomm
