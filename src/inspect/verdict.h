// The CUDA compatibility rules: can an image built for one target run on a device of compute
// capability X.Y, natively or by JIT-compiling PTX? Sources (see also docs/INSPECT.md):
//  - CUDA C++ Programming Guide, "Compute Capabilities" and "Binary/PTX compatibility"
//    (docs.nvidia.com/cuda/cuda-programming-guide): a cubin for sm_XY runs on any device of the
//    same major X with minor >= Y; PTX for compute_XY is JIT-compiled for any device >= X.Y.
//  - Architecture-specific targets (sm_90a, sm_100a, ...; PTX ISA notes, "sm_90a"): neither
//    forward nor backward compatible, the image runs only on exactly that X.Y, cubin or PTX.
//  - Family-specific targets (sm_100f, sm_120f), NVIDIA blog "NVIDIA Blackwell and NVIDIA CUDA
//    12.9 Introduce Family-Specific Architecture Features" (developer.nvidia.com/blog, 2025):
//    code for sm_XYf runs on devices of the same major X whose minor is >= Y, e.g. sm_100f on
//    10.0 and 10.3, sm_103f on 10.3 only, sm_120f on 12.0 and 12.1, never on another major.
//    LLVM's NVPTX target models it the same way ("compare within the family by comparing the
//    full SM version", llvm-project PR 141899).
//  - LTO IR (NVVM) is never loaded by the driver: it is input to a device link (nvlink -dlto).
#pragma once

#include <string>

#include "inspect/fatbin.h"

namespace tpcomm::inspect {

enum class Compat { kNative, kJit, kNone };

// How one image fares on a device of compute capability major.minor.
Compat entryCompat(const FatbinEntry& e, int cc_major, int cc_minor);

enum class VerdictKind {
  kNative,        // every container has a cubin for this device
  kPtxJit,        // runs, but some container only through PTX JIT at first launch
  kNoImage,       // some container that holds kernels has neither a compatible cubin nor PTX
  kNoDeviceCode,  // the file carries no kernels: nothing to run, so nothing can fail
  kUnknown        // the inspector cannot tell: the file or an image that decides could not be
                  // read (corrupt, truncated, compressed beyond reach); neither runs nor fails
};

struct Verdict {
  VerdictKind kind = VerdictKind::kNoDeviceCode;
  std::string detail;  // "sm_90 cubin", "PTX compute_120 JIT: ...", "no image for 8.0: ..."
  bool canRun() const {
    return kind == VerdictKind::kNative || kind == VerdictKind::kPtxJit ||
           kind == VerdictKind::kNoDeviceCode;
  }
};

// "native", "ptx-jit", "no-image", "no-device-code", "unknown"
const char* verdictName(VerdictKind kind);

}  // namespace tpcomm::inspect
