// `tpcomm tune` where it cannot measure: no GPU visible (CUDA_VISIBLE_DEVICES=-1, so this passes
// on GPU machines too) exits 2 with a message and writes nothing; bad options exit 2.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/cpu/support/cli_run.h"

namespace tpcomm {
namespace {

using test::CliResult;

// Runs `tpcomm tune <args>` with no GPU visible; stdout and stderr together.
CliResult tune(const std::string& args) {
  return test::runCommand(std::string("env CUDA_VISIBLE_DEVICES=-1 '") + TPCOMM_CLI_PATH +
                          "' tune " + args + " 2>&1");
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(TuneCli, NoGpuExitsTwoAndWritesNothing) {
  const std::string out = ::testing::TempDir() + "tpcomm_tune_cli_table.json";
  remove(out.c_str());
  const CliResult r = tune("--quick --out '" + out + "'");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(has(r.out, "tpcomm tune: no GPU visible")) << r.out;
  EXPECT_TRUE(has(r.out, "nothing to measure")) << r.out;
  struct stat st;
  EXPECT_NE(stat(out.c_str(), &st), 0) << "a table was written without measuring";
}

TEST(TuneCli, UsageErrorsExitTwo) {
  for (const char* bad :
       {"--bogus", "--world 1", "--world 9", "--world two", "--dtype int8", "--tie 0.5", "--out",
        "--hidden 0", "--hidden 65537", "--hidden wide", "--hidden"}) {
    const CliResult r = tune(bad);
    EXPECT_EQ(r.status, 2) << bad << ": " << r.out;
    EXPECT_FALSE(has(r.out, "no GPU visible")) << bad << ": options are checked first";
  }
  const CliResult help = tune("--help");
  EXPECT_EQ(help.status, 0);
  EXPECT_TRUE(has(help.out, "--quick")) << help.out;
  EXPECT_TRUE(has(help.out, "--out FILE")) << help.out;
  EXPECT_TRUE(has(help.out, "--hidden H")) << help.out;
  EXPECT_TRUE(has(help.out, "--share-gpu")) << help.out;
  EXPECT_TRUE(has(help.out, "--no-wire")) << help.out;
  EXPECT_TRUE(has(help.out, "(wire_from)")) << help.out;
}

// --no-wire is an option (checked before the GPUs: without one, "no GPU visible"), with no value.
TEST(TuneCli, NoWireIsAnOption) {
  CliResult r = tune("--no-wire --quick");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(has(r.out, "tpcomm tune: no GPU visible")) << r.out;
  r = tune("--no-wire=1");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(has(r.out, "unknown option or missing value: '--no-wire=1'")) << r.out;
}

// --share-gpu needs a GPU too: without one it says so and exits 2.
TEST(TuneCli, ShareGpuWithoutAGpuExitsTwo) {
  const CliResult r = tune("--share-gpu --world 4");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(has(r.out, "tpcomm tune: no GPU visible")) << r.out;
}

}  // namespace
}  // namespace tpcomm
