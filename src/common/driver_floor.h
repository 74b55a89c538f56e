// The NVIDIA driver a build of tpcomm needs, and what to tell a user whose driver is older.
// tpcomm links the CUDA runtime statically, so the runtime's version is fixed at build time; by
// CUDA's minor-version compatibility it runs on any driver of its major release's first branch
// or newer (CUDA 13.x: R580), and cudart reports an older one as cudaErrorInsufficientDriver.
#pragma once

#include <string>

namespace tpcomm {

// The oldest driver branch that runs code built with CUDA `runtime_major` (13 -> 580), 0 when
// this build does not know that major release.
int minimumDriverBranch(int runtime_major);

// The hint for cudaErrorInsufficientDriver, from cudaDriverGetVersion's and
// cudaRuntimeGetVersion's values (1000 * major + 10 * minor, e.g. 12080 and 13000; a driver of 0
// means none was found): which driver is there, which one this build needs, and the fix. The
// caller prefixes "no usable NVIDIA driver: ".
std::string insufficientDriverHint(int driver_api, int runtime_api);

}  // namespace tpcomm
