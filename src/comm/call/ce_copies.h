// The host side of the copy-engine one-shot (oneshot_ce, kernels/oneshot_ce.cu): what one call
// enqueues in its stream, step by step (comm/call/ce_steps.h lists a step): the guard kernel, this
// rank's input copied into every peer's landing slot, this rank's flag word copied after those,
// the wait kernel and the reduce kernel: peer copies (cudaMemcpyAsync, memcpy nodes once
// captured), never a kernel's stores.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/runtime/algo_launch.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

// Enqueues the planned oneshot_ce call `a` (a.geometry: a step is one source region of a
// landing slot). *steps counts the communicator's CE steps: step k lands in slot k % kNumSlots,
// the same on every rank because every rank enqueues the same calls.
tpcommResult_t launchOneShotCe(const DeviceComm& c, const LaunchArgs& a, uint64_t* steps,
                               cudaStream_t s);

}  // namespace tpcomm
