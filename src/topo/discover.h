// Builds the Topology of the live machine from the CUDA runtime (always), NVML (when
// libnvidia-ml.so.1 loads: NVLink counts, PCIe path class, driver version) and Linux sysfs (NUMA
// node and, without NVML, the PCIe path class). Whether P2P actually works is not decided here:
// supported pairs come back kUnknown and checkP2pHealth() (p2p_cache.h) tests or recalls them.
#pragma once

#include <string>

#include "topo/topology.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {
namespace topo {

// On a machine without a usable GPU or driver: returns tpcommNoDevice with a message (read with
// lastError / tpcommGetLastError) that says which, and leaves *out empty (no GPUs). Never crashes
// and never needs NVML. Does not change the current device and creates no CUDA context.
tpcommResult_t discover(Topology* out);

// The driver version from the text of /proc/driver/nvidia/version ("" if none is found); the
// fallback when NVML is missing, so that the topology key still changes with the driver.
std::string driverVersionFromProc(const std::string& text);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from the 16 bytes of a cudaUUID_t (nvidia-smi's form).
std::string formatGpuUuid(const unsigned char bytes[16]);

}  // namespace topo
}  // namespace tpcomm
