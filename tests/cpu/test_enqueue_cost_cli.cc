// tpcomm-enqueue-cost refuses a command line it would misread, before it looks for a GPU: atoi
// read "--calls 1e3" as 1 and "--ranks 2x" as 2, and an option left without its value was dropped.
#include <gtest/gtest.h>

#include <string>

#include "support/cli_run.h"

namespace {

#ifdef TPCOMM_ENQUEUE_COST_PATH
using tpcomm::test::runCommand;

// The run's output when the command line is refused: exit 2 and a line naming the reason.
void expectRefused(const std::string& args, const char* reason) {
  const auto r = runCommand(TPCOMM_ENQUEUE_COST_PATH " " + args + " 2>&1");
  EXPECT_EQ(r.status, 2) << args << ": " << r.out;
  EXPECT_NE(r.out.find(reason), std::string::npos) << args << ": " << r.out;
}

TEST(EnqueueCostCli, NumbersMustBeWholeAndInRange) {
  expectRefused("--calls 1e3", "--calls 1e3 is not a whole number");
  expectRefused("--ranks 2x", "--ranks 2x is not a whole number");
  expectRefused("--bursts -1", "--bursts -1 is not a whole number");
  expectRefused("--calls 0", "--calls 0 is not a whole number");
  expectRefused("--streams 99999999999", "is not a whole number");
}

TEST(EnqueueCostCli, ShapesTheToolCannotRunAreRefused) {
  expectRefused("--ranks 1", "--ranks >= 2");
  expectRefused("--streams 3", "--streams 1 or 2");
  expectRefused("--calls", "--calls needs a value");
  expectRefused("--ranks 2 --bursts", "--bursts needs a value");
  expectRefused("--sizes 1024", "unknown option --sizes");
}
#else
TEST(EnqueueCostCli, NotBuilt) {
  GTEST_SKIP() << "built without TPCOMM_BUILD_BENCH";
}
#endif

}  // namespace
