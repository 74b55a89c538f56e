// The start-up check's PTX-JIT decision and warning, on fake driver answers: a GPU the build has
// no SASS for runs tpcomm only through PTX JIT, which init says once per process at WARN (the
// default level) with the rebuild hint, and which the communicator counts.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "common/log.h"
#include "kernels/runtime/image_check.h"

namespace tpcomm {
namespace {

cudaFuncAttributes attributes(int binary_version, int ptx_version) {
  cudaFuncAttributes a{};
  a.binaryVersion = binary_version;
  a.ptxVersion = ptx_version;
  return a;
}

TEST(PtxJitCheck, DecisionFromWhatTheDriverLoaded) {
  EXPECT_FALSE(ranFromPtxJit(attributes(90, 90)));    // sm_90 SASS on an H200
  EXPECT_FALSE(ranFromPtxJit(attributes(120, 120)));  // sm_120 SASS on a 12.1 GPU
  EXPECT_TRUE(ranFromPtxJit(attributes(130, 120)));   // compute_120 PTX on a future 13.0 GPU
  EXPECT_TRUE(ranFromPtxJit(attributes(90, 80)));     // compute_80 PTX on 9.0
  EXPECT_FALSE(ranFromPtxJit(attributes(90, 0)));     // no PTX version known: not claimed
}

TEST(PtxJitCheck, WarningSaysWhyAndHowToRebuild) {
  const std::string m =
      ptxJitMessage(3, 13, 0, "75-real,80-real,89-real,90-real,100-real,110-real,120");
  EXPECT_NE(m.find("GPU 3 (compute capability 13.0)"), std::string::npos) << m;
  EXPECT_NE(m.find("only through PTX JIT"), std::string::npos) << m;
  EXPECT_NE(m.find("has no SASS for it"), std::string::npos) << m;
  EXPECT_NE(m.find("-DTPCOMM_CUDA_ARCHS=\"75-real;80-real;89-real;90-real;100-real;"
                   "110-real;120;130-real\""),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("tpcomm inspect --cc 13.0"), std::string::npos) << m;
  EXPECT_NE(ptxJitMessage(0, 9, 0, "").find("-DTPCOMM_CUDA_ARCHS=\"90-real\""), std::string::npos);
}

TEST(PtxJitCheck, SaidOncePerProcessAtTheDefaultLevel) {
  // The warning's level is the default one: it shows unless the user turned logging down.
  if (!getenv("TPCOMM_LOG")) {
    EXPECT_EQ(logLevel(), LogLevel::kWarn);
  }
  EXPECT_TRUE(firstPtxJitWarning());
  EXPECT_FALSE(firstPtxJitWarning());  // a second communicator does not repeat it
  EXPECT_FALSE(firstPtxJitWarning());
}

}  // namespace
}  // namespace tpcomm
