// On a machine without GPU or driver (CI): the library loads and every entry point answers with a
// clear error, never a crash.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>

#include "tpcomm/tpcomm.h"

namespace {

bool noGpu() {
  int n = 0;
  const bool none = cudaGetDeviceCount(&n) != cudaSuccess || n == 0;
  cudaGetLastError();
  return none;
}

TEST(NoDevice, CommunicatorCreationSaysNoDevice) {
  if (!noGpu()) GTEST_SKIP() << "a GPU is visible";
  tpcommComm_t comms[2] = {nullptr, nullptr};
  EXPECT_EQ(tpcommCommInitAll(comms, 2, nullptr, nullptr), tpcommNoDevice);
  const std::string msg = tpcommGetLastError();
  EXPECT_NE(msg.find("tpcommNoDevice"), std::string::npos) << msg;
  EXPECT_TRUE(msg.find("driver") != std::string::npos ||
              msg.find("no CUDA device") != std::string::npos)
      << msg;
  EXPECT_EQ(comms[0], nullptr);

  tpcommUniqueId id;
  ASSERT_EQ(tpcommGetUniqueId(&id), tpcommSuccess);  // needs no GPU
  tpcommComm_t c = nullptr;
  EXPECT_EQ(tpcommCommInitRank(&c, 2, id, 0, nullptr), tpcommNoDevice);
  EXPECT_EQ(c, nullptr);
  tpcommRankHandle h;
  EXPECT_EQ(tpcommCommInitRankBegin(&c, 2, 0, nullptr, &h), tpcommNoDevice);
}

TEST(NoDevice, CallsOnBadHandlesAreRefused) {
  alignas(16) static char buf[64];
  EXPECT_EQ(tpcommAllReduce(buf, buf, 4, tpcommFloat32, tpcommSum, nullptr, nullptr),
            tpcommInvalidArgument);
  EXPECT_NE(std::string(tpcommGetLastError()).find("comm is NULL"), std::string::npos);
  auto* fake = reinterpret_cast<tpcommComm_t>(buf);
  EXPECT_EQ(tpcommAllReduce(buf, buf, 4, tpcommFloat32, tpcommSum, fake, nullptr),
            tpcommInvalidUsage);
  EXPECT_NE(std::string(tpcommGetLastError()).find("not a live communicator"), std::string::npos);
  EXPECT_EQ(tpcommCommDestroy(fake), tpcommInvalidUsage);
  int v = 0;
  EXPECT_EQ(tpcommCommCount(fake, &v), tpcommInvalidUsage);
  EXPECT_EQ(tpcommCommInitRankEnd(fake, nullptr), tpcommInvalidUsage);
}

TEST(NoDevice, ArgumentsAreCheckedBeforeTheDevice) {
  tpcommComm_t comms[9];
  EXPECT_EQ(tpcommCommInitAll(nullptr, 2, nullptr, nullptr), tpcommInvalidArgument);
  EXPECT_EQ(tpcommCommInitAll(comms, 9, nullptr, nullptr), tpcommInvalidArgument);
  EXPECT_NE(std::string(tpcommGetLastError()).find("1..8"), std::string::npos);
  tpcommUniqueId id;
  ASSERT_EQ(tpcommGetUniqueId(&id), tpcommSuccess);
  EXPECT_EQ(tpcommCommInitRank(comms, 2, id, 5, nullptr), tpcommInvalidArgument);
  EXPECT_NE(std::string(tpcommGetLastError()).find("rank=5"), std::string::npos);
  EXPECT_EQ(tpcommGetUniqueId(nullptr), tpcommInvalidArgument);
}

TEST(NoDevice, NamesAndStrings) {
  for (int r = 0; r < tpcommNumResults; ++r)
    EXPECT_NE(std::string(tpcommGetErrorString(static_cast<tpcommResult_t>(r))),
              "unknown result code");
  EXPECT_STREQ(tpcommAlgoName(tpcommAlgoOneShot), "oneshot");
  EXPECT_STREQ(tpcommAlgoName(tpcommAlgoHostTwoShot), "host_twoshot");
  EXPECT_EQ(tpcommAlgoName(99), nullptr);
  int v = 0;
  EXPECT_EQ(tpcommGetVersion(&v), tpcommSuccess);
  EXPECT_EQ(v, TPCOMM_VERSION_CODE);
}

}  // namespace
