// Does peer-to-peer access between two GPUs actually move data? The driver may report P2P as
// supported on machines where it hangs or silently corrupts (IOMMU on, PCIe ACS redirecting peer
// traffic through the root complex, some VMs). A short bounded test finds out before an
// all-reduce kernel would spin on data that never arrives.
#pragma once

#include <string>

#include "topo/topology.h"

namespace tpcomm {
namespace topo {

// Enables peer access both ways, copies a known pattern a -> b with cudaMemcpyPeerAsync and back
// b -> a, and checks both copies on the host (no kernels, so it needs no kernel image). Every
// wait is bounded by timeout_ms (cudaStreamQuery polling). Returns
//   kWorks      both copies finished in time and read back exactly;
//   kBroken     a copy timed out or the data differ (*why says which, and where);
//   kNotTested  the driver does not support P2P between the two;
//   kUnknown    the test could not run (no device, out of memory, ...): *why says why.
// After a timeout the buffers and streams of the stuck copy are deliberately leaked (freeing them
// would wait for the copy); peer access that the test enabled is disabled again otherwise.
// The current device is restored. Cost: ~15 ms per pair once the CUDA contexts exist, but it
// creates a context on both GPUs if the process has none there yet (~0.2 s and some GPU memory
// for the process's lifetime): fine for one process driving all GPUs (tpcommCommInitAll, doctor,
// tune); with one process per GPU, prefer the cached result or testing in one process only.
P2pHealth testP2p(int dev_a, int dev_b, int timeout_ms, std::string* why);

}  // namespace topo
}  // namespace tpcomm
