// Stand-ins for other work on a rank's stream: a hung NCCL kernel (spins until a host-mapped flag
// is set, or a safety bound passes, so a broken watchdog fails the test instead of hanging it),
// and a rank that runs late (a one-thread kernel that spins for a while before the rank's call).
#pragma once

#include <cuda_runtime.h>

namespace tpcomm::test {

// Spins on *flag (host-mapped, device pointer) until it is nonzero or bound_ms passed.
void launchSpinUntilFlag(const volatile int* flag, unsigned bound_ms, cudaStream_t stream);

// One thread that spins for `ns` nanoseconds (%globaltimer): the rank whose stream holds it
// starts its next call that much later than its peers.
void launchSpinFor(unsigned ns, cudaStream_t stream);

// `blocks` blocks of `threads` threads whose first threads count themselves in at *counter
// (device memory, zeroed) and wait until `n` blocks have (or `bound_ms` passed), then add 1 to
// *done each if all n came: such grids on several streams tell whether kernels that wait for each
// other are resident at once (a tool may serialise or limit them).
void launchRendezvous(unsigned* counter, unsigned n, unsigned* done, unsigned bound_ms, int blocks,
                      int threads, cudaStream_t stream);

}  // namespace tpcomm::test
