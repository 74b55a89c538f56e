// tpcomm-demo (the README's first command) tells the real reason it did not run and never exits 0
// when nothing ran.
#include <gtest/gtest.h>

#include <string>

#include "support/cli_run.h"

namespace {

#ifdef TPCOMM_DEMO_PATH
using tpcomm::test::runCommand;

bool has(const std::string& text, const char* word) {
  return text.find(word) != std::string::npos;
}

TEST(Demo, ABadEnvironmentValueIsReportedAsItselfNotAsAMissingGpu) {
  // Checked before any device is looked at, so this holds with and without a GPU.
  const auto r = runCommand("TPCOMM_TRANSPORT=nvlink " TPCOMM_DEMO_PATH " 2>&1");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(has(r.out, "TPCOMM_TRANSPORT=nvlink")) << r.out;
  EXPECT_TRUE(has(r.out, "tpcommInvalidArgument")) << r.out;
  EXPECT_FALSE(has(r.out, "no CUDA device")) << r.out;
}

TEST(Demo, WithoutAGpuItSaysSoAndExitsNonZero) {
  const auto r = runCommand(TPCOMM_DEMO_PATH " 2>&1");
  if (has(r.out, "ranks on")) GTEST_SKIP() << "a GPU is visible: the demo ran";
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(has(r.out, "no CUDA device is visible")) << r.out;
  EXPECT_TRUE(has(r.out, "nothing ran")) << r.out;
  EXPECT_TRUE(has(r.out, "tpcommNoDevice")) << r.out;
}
#else
TEST(Demo, NotBuilt) {
  GTEST_SKIP() << "built without TPCOMM_BUILD_EXAMPLES";
}
#endif

}  // namespace
