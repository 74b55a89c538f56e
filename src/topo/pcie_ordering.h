// Whether the NVIDIA driver lets a GPU set PCIe Relaxed Ordering on its writes, from the driver's
// parameters (/proc/driver/nvidia/params). The host-memory protocols' clears are ordered before a
// peer's next push by PCIe's rule that one requester's posted writes do not pass each other, a
// rule that holds only for writes without the Relaxed Ordering attribute (docs/PROTOCOL.md, "The
// host sentinel's clears"). Where the driver may set it, or where that cannot be read, the
// launch knob host_fence (auto) turns the fences on that order the clears in the PTX model.
//
// What the driver says (NVIDIA open-gpu-kernel-modules, kernel-open/nvidia/nv-reg.h and
// src/nvidia/interface/nvrm_registry.h): NVreg_EnablePCIERelaxedOrderingMode=1 makes every GPU
// set the bit on all outbound memory writes (default 0); the registry key RmSetPCIERelaxedOrdering
// (in NVreg_RegistryDwords or NVreg_RegistryDwordsPerDevice) is 0 (off, the default), 1 (where the
// topology allows) or 2 (forced).
#pragma once

#include <string>

namespace tpcomm {
namespace topo {

enum class RelaxedOrdering {
  kOff,  // the driver sets no Relaxed Ordering bit: one GPU's writes to host memory stay in order
  kOn,   // it may set it on some or all GPUs' writes
  kUnknown,  // the parameters could not be read or do not say
};

struct PcieOrdering {
  RelaxedOrdering state = RelaxedOrdering::kUnknown;
  std::string why;  // for logs and doctor: what was read, and where
};

// Judges the text of /proc/driver/nvidia/params (pure string logic; CPU-tested).
PcieOrdering relaxedOrderingFromParams(const std::string& text);

// Reads the live driver's parameters (path: the file, for tests); kUnknown when it cannot.
PcieOrdering readRelaxedOrdering(const std::string& path = "/proc/driver/nvidia/params");

}  // namespace topo
}  // namespace tpcomm
