// The driver floor (src/common/driver_floor.h): which driver a build needs, and the message a
// user with none, or with an older one, reads instead of a crash.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>

#include "common/driver_floor.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(DriverFloor, MinorVersionCompatibilityBranches) {
  EXPECT_EQ(minimumDriverBranch(12), 525);
  EXPECT_EQ(minimumDriverBranch(13), 580);
  EXPECT_EQ(minimumDriverBranch(99), 0);
}

TEST(DriverFloor, NoDriverNamesTheBranchNeeded) {
  const std::string h = insufficientDriverHint(0, 13000);
  EXPECT_TRUE(has(h, "libcuda.so.1 was not found")) << h;
  EXPECT_TRUE(has(h, "CUDA 13.0 runtime")) << h;
  EXPECT_TRUE(has(h, "R580 branch or newer (CUDA 13.x)")) << h;
}

TEST(DriverFloor, AnOlderDriverNamesBothVersions) {
  const std::string h = insufficientDriverHint(12080, 13000);  // an R570 driver
  EXPECT_TRUE(has(h, "supports CUDA 12.8, older than this build's CUDA 13.0")) << h;
  EXPECT_TRUE(has(h, "R580 branch or newer")) << h;
}

TEST(DriverFloor, AnUnknownRuntimeStillSaysWhatItNeeds) {
  const std::string h = insufficientDriverHint(13000, 14010);
  EXPECT_TRUE(has(h, "a driver for CUDA 14.1 or newer")) << h;
}

TEST(DriverFloor, ANewEnoughDriverThatFailsIsNotCalledOld) {
  const std::string h = insufficientDriverHint(13000, 13000);
  EXPECT_FALSE(has(h, "older")) << h;
  EXPECT_TRUE(has(h, "nvidia-smi")) << h;
}

// Where no driver is installed (CI), the C API's answer carries the floor, not only "no driver".
TEST(DriverFloor, CommunicatorCreationWithoutADriverStatesTheFloor) {
  int driver = -1;
  if (cudaDriverGetVersion(&driver) != cudaSuccess || driver != 0)
    GTEST_SKIP() << "an NVIDIA driver is installed (CUDA " << driver << ")";
  tpcommComm_t comms[2] = {nullptr, nullptr};
  EXPECT_EQ(tpcommCommInitAll(comms, 2, nullptr, nullptr), tpcommNoDevice);
  const std::string msg = tpcommGetLastError();
  EXPECT_TRUE(has(msg, "libcuda.so.1 was not found")) << msg;
  EXPECT_TRUE(has(msg, "R580 branch or newer")) << msg;
}

}  // namespace
}  // namespace tpcomm
