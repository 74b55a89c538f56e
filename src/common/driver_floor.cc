#include "common/driver_floor.h"

#include "common/str_format.h"

namespace tpcomm {

int minimumDriverBranch(int runtime_major) {
  // NVIDIA's CUDA compatibility guide, "Minor Version Compatibility": 11.x >= 450, 12.x >= 525,
  // 13.x >= 580.
  switch (runtime_major) {
    case 11:
      return 450;
    case 12:
      return 525;
    case 13:
      return 580;
    default:
      return 0;
  }
}

std::string insufficientDriverHint(int driver_api, int runtime_api) {
  const int rt_major = runtime_api / 1000, rt_minor = runtime_api % 1000 / 10;
  const int branch = minimumDriverBranch(rt_major);
  const std::string need =
      branch > 0 ? strFormat("a driver of the R%d branch or newer (CUDA %d.x)", branch, rt_major)
                 : strFormat("a driver for CUDA %d.%d or newer", rt_major, rt_minor);
  if (driver_api <= 0)
    return strFormat(
        "libcuda.so.1 was not found; this build of tpcomm (CUDA "
        "%d.%d runtime) needs %s",
        rt_major, rt_minor, need.c_str());
  const int drv_major = driver_api / 1000, drv_minor = driver_api % 1000 / 10;
  if (driver_api < runtime_api)
    return strFormat(
        "the NVIDIA driver supports CUDA %d.%d, older than this build's CUDA %d.%d "
        "runtime: install %s",
        drv_major, drv_minor, rt_major, rt_minor, need.c_str());
  return strFormat(
      "the NVIDIA driver reports CUDA %d.%d, yet the CUDA %d.%d runtime refused it: "
      "check that libcuda.so.1 is the driver's own (not a stub or a compat copy) "
      "and matches the kernel module (nvidia-smi)",
      drv_major, drv_minor, rt_major, rt_minor);
}

}  // namespace tpcomm
