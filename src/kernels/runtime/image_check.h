// Start-up self-check: every kernel of the variant table (variant_table.h: every kernel the launch
// can pick) has an image for this device. A missing
// image is tpcommNoKernelImage at init with a message that says how to rebuild, instead of an
// "invalid device function" at the first call (the SM120 story in docs/ARCH.md).
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

// Checks on `device` (made current). *ptx_jit tells whether the kernels run only through PTX
// that the driver JIT-compiled (no SASS for this GPU in the build): said once per process at
// WARN, the default level, with the rebuild hint (ptxJitMessage).
tpcommResult_t checkKernelImages(int device, bool* ptx_jit = nullptr);
// The kernel entry points checkKernelImages asks the runtime about (host stubs, no GPU needed).
std::vector<const void*> checkedKernels();
// The CUDA architectures this library was built for (CMake TPCOMM_CUDA_ARCHS).
const char* builtArchitectures();

// Whether the driver runs a kernel from JIT-compiled PTX, from what cudaFuncGetAttributes says:
// the binary it loaded is for a newer architecture than the PTX it was made from (a SASS image
// of the build has binaryVersion == ptxVersion).
bool ranFromPtxJit(const cudaFuncAttributes& attr);
// The warning for a GPU of compute capability major.minor that runs tpcomm only through PTX JIT,
// with the -DTPCOMM_CUDA_ARCHS value that adds native code for it to `built` ("75-real,...").
std::string ptxJitMessage(int device, int major, int minor, const char* built);
// True for the first caller in the process only: the warning is said once, not per communicator.
bool firstPtxJitWarning();

}  // namespace tpcomm
