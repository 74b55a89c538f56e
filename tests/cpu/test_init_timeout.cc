// The wait of tpcommCommInitRank's rendezvous: config.initTimeoutMs (config version 2), else
// TPCOMM_INIT_TIMEOUT_MS, else 60 s; independent of timeoutMs (the GPU-side waits).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "comm/lifecycle/config.h"
#include "common/error.h"

namespace tpcomm {
namespace {

TEST(InitTimeout, DefaultIsSixtySecondsWhateverTimeoutMs) {
  if (getenv("TPCOMM_INIT_TIMEOUT_MS")) GTEST_SKIP() << "TPCOMM_INIT_TIMEOUT_MS is set";
  tpcommConfig_t c = TPCOMM_CONFIG_INITIALIZER;
  c.timeoutMs = 250;
  Settings s;
  ASSERT_EQ(resolveSettings(&c, &s), tpcommSuccess) << lastError();
  EXPECT_EQ(s.init_timeout_ms, 60000);
  EXPECT_EQ(s.timeout_ms, 250);
}

TEST(InitTimeout, ConfigFieldSetsIt) {
  tpcommConfig_t c = TPCOMM_CONFIG_INITIALIZER;
  EXPECT_EQ(c.version, 2u);
  c.initTimeoutMs = 1500;
  Settings s;
  ASSERT_EQ(resolveSettings(&c, &s), tpcommSuccess) << lastError();
  EXPECT_EQ(s.init_timeout_ms, 1500);
  c.initTimeoutMs = -5;
  EXPECT_EQ(resolveSettings(&c, &s), tpcommInvalidArgument);
  EXPECT_NE(std::string(lastError()).find("config.initTimeoutMs=-5"), std::string::npos)
      << lastError();
}

// A caller built against version 1 has no initTimeoutMs: those bytes were tail padding (the
// struct's size is the same), so whatever they hold is not read.
TEST(InitTimeout, VersionOneConfigIgnoresTheTailBytes) {
  if (getenv("TPCOMM_INIT_TIMEOUT_MS")) GTEST_SKIP() << "TPCOMM_INIT_TIMEOUT_MS is set";
  tpcommConfig_t c = TPCOMM_CONFIG_INITIALIZER;
  c.version = 1;
  c.initTimeoutMs = -12345;  // garbage in the old padding
  Settings s;
  ASSERT_EQ(resolveSettings(&c, &s), tpcommSuccess) << lastError();
  EXPECT_EQ(s.init_timeout_ms, 60000);
}

// The environment is read once per process, so the variable is checked in a fresh one: this
// test binary, re-run with only the child test below and the variable set.
int runChild(const char* value, const char* expect) {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("TPCOMM_INIT_TIMEOUT_MS", value, 1);
    setenv("TPCOMM_TEST_EXPECT_INIT_TIMEOUT", expect, 1);
    execl("/proc/self/exe", "tpcomm_cpu_tests", "--gtest_filter=InitTimeoutChild.*",
          static_cast<char*>(nullptr));
    _exit(97);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(InitTimeout, EnvironmentVariableSetsItAndABadValueFails) {
  EXPECT_EQ(runChild("4321", "4321"), 0);
  EXPECT_EQ(runChild("soon", "error"), 0);
}

TEST(InitTimeoutChild, FromTheEnvironment) {
  const char* expect = getenv("TPCOMM_TEST_EXPECT_INIT_TIMEOUT");
  if (!expect) GTEST_SKIP() << "run by InitTimeout.EnvironmentVariableSetsItAndABadValueFails";
  Settings s;
  const tpcommResult_t r = resolveSettings(nullptr, &s);
  if (std::string(expect) == "error") {
    EXPECT_EQ(r, tpcommInvalidArgument);
    EXPECT_NE(std::string(lastError()).find("TPCOMM_INIT_TIMEOUT_MS=soon"), std::string::npos)
        << lastError();
  } else {
    ASSERT_EQ(r, tpcommSuccess) << lastError();
    EXPECT_EQ(s.init_timeout_ms, atoi(expect));
  }
}

}  // namespace
}  // namespace tpcomm
