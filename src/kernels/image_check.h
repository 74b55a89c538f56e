// Start-up self-check: every kernel of the variant table (variant_table.h: every kernel the launch
// can pick) has an image for this device. A missing
// image is tpcommNoKernelImage at init with a message that says how to rebuild, instead of an
// "invalid device function" at the first call (the SM120 story in docs/ARCH.md).
#pragma once

#include <vector>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

// Checks on `device` (made current). Reports a PTX-JIT-only kernel once at TPCOMM_LOG=info.
tpcommResult_t checkKernelImages(int device);
// The kernel entry points checkKernelImages asks the runtime about (host stubs, no GPU needed).
std::vector<const void*> checkedKernels();
// The CUDA architectures this library was built for (CMake TPCOMM_CUDA_ARCHS).
const char* builtArchitectures();

}  // namespace tpcomm
