// What a call refused on a broken communicator does before it returns the error: it fills the
// call's outputs with all ones (a NaN in fp32, fp16 and bf16, and byte by byte in FP8 e4m3), as
// the kernels fill the outputs of a call that failed on the GPU (kernels/device/poison_device.cuh).
// An engine that goes on without reading the error then computes on NaN, never on the numbers an
// earlier call left there.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <initializer_list>

#include "comm/comm.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

// The poison's bytes: all ones, as the kernels write it (poisonVec).
constexpr int kPoisonByte = 0xFF;

struct OutputSpan {
  void* ptr = nullptr;
  size_t bytes = 0;
};

// The outputs of each collective (pure: the CPU tests check them). elem_bytes: the datatype's.
OutputSpan allReduceOutput(void* recv, size_t count, size_t elem_bytes);
// Reduce-scatter: recvcount elements; all-gather: world runs of sendcount (world: the ranks of
// the call, every machine's for a communicator that spans machines).
OutputSpan rsagOutput(tpcommColl_t coll, void* recv, size_t count, size_t elem_bytes, int world);
// tpcommAllReduceAddRmsNorm: residualOut, and normOut (one byte an element with FP8 output).
struct FusedOutputs {
  OutputSpan residual, norm;
};
FusedOutputs fusedOutputs(void* residual_out, void* norm_out, size_t tokens, size_t hidden,
                          size_t elem_bytes, bool fp8);

// The outputs filled with the poison on s (cudaMemsetAsync; inside a capture, memset nodes of the
// graph, so its replays poison too); false if a fill failed. runCall (comm/call/run_call.h) fills
// a refused call's outputs, ordered after the communicator's earlier calls as a call is, before
// it returns the communicator's error.
bool fillPoison(std::initializer_list<OutputSpan> outs, cudaStream_t s);

}  // namespace tpcomm
