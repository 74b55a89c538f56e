// The suite's own guard against lazy module loading (tests/gpu/main.cc says why): the driver must
// load modules eagerly in this process, whatever the environment it was started from.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/gpu/harness.h"

namespace tpcomm::test {
namespace {

TEST(GpuSuite, ModulesLoadEagerly) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  ASSERT_EQ(
      cudaGetDriverEntryPointByVersion("cuModuleGetLoadingMode", &fn, 11070, cudaEnableDefault, &q),
      cudaSuccess);
  ASSERT_EQ(q, cudaDriverEntryPointSuccess);
  CUmoduleLoadingMode mode = CU_MODULE_LAZY_LOADING;
  ASSERT_EQ(reinterpret_cast<PFN_cuModuleGetLoadingMode_v11070>(fn)(&mode), CUDA_SUCCESS);
  printf("module loading: %s\n", mode == CU_MODULE_EAGER_LOADING ? "eager" : "lazy");
  EXPECT_EQ(mode, CU_MODULE_EAGER_LOADING);
}

}  // namespace
}  // namespace tpcomm::test
