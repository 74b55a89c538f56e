// A stand-in for a hung NCCL kernel: spins until a host-mapped flag is set (or a safety bound
// passes, so a broken watchdog fails the test instead of hanging it).
#pragma once

#include <cuda_runtime.h>

namespace tpcomm::test {

// Spins on *flag (host-mapped, device pointer) until it is nonzero or bound_ms passed.
void launchSpinUntilFlag(const volatile int* flag, unsigned bound_ms, cudaStream_t stream);

}  // namespace tpcomm::test
