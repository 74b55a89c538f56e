// The Unix-socket rendezvous, across real processes (fork: no CUDA is involved): the all-gather,
// and every way it can fail clearly instead of hanging.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "comm/bootstrap.h"
#include "comm/unique_id.h"
#include "common/error.h"

namespace tpcomm {
namespace {

constexpr size_t kLen = 40;

std::vector<char> blob(int rank) {
  std::vector<char> b(kLen);
  for (size_t i = 0; i < kLen; ++i) b[i] = static_cast<char>(rank * 31 + i);
  return b;
}

// Runs the all-gather as `rank` and checks the table; exit code 0 = success, else the result code.
int gatherAs(const tpcommUniqueId& id, int rank, int nranks, int timeout_ms) {
  std::vector<char> all(kLen * nranks);
  const std::vector<char> mine = blob(rank);
  const tpcommResult_t r =
      bootstrapAllGather(id, rank, nranks, mine.data(), kLen, all.data(), timeout_ms);
  if (r != tpcommSuccess) return static_cast<int>(r);
  for (int q = 0; q < nranks; ++q)
    if (memcmp(all.data() + q * kLen, blob(q).data(), kLen) != 0) return 100;
  return 0;
}

pid_t forkRank(const tpcommUniqueId& id, int rank, int nranks, int timeout_ms) {
  const pid_t pid = fork();
  if (pid == 0) _exit(gatherAs(id, rank, nranks, timeout_ms));
  return pid;
}

int exitCode(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(Bootstrap, FourProcessesAllGather) {
  tpcommUniqueId id;
  ASSERT_EQ(tpcommGetUniqueId(&id), tpcommSuccess);
  std::vector<pid_t> pids;
  for (int r = 3; r >= 1; --r) pids.push_back(forkRank(id, r, 4, 10000));  // peers first: retry
  EXPECT_EQ(gatherAs(id, 0, 4, 10000), 0) << lastError();
  for (pid_t p : pids) EXPECT_EQ(exitCode(p), 0);
}

TEST(Bootstrap, MissingRankIsATimeoutNamingIt) {
  tpcommUniqueId id;
  ASSERT_EQ(tpcommGetUniqueId(&id), tpcommSuccess);
  const pid_t p1 = forkRank(id, 1, 3, 5000);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(gatherAs(id, 0, 3, 700), static_cast<int>(tpcommTimeout));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 3.0);
  EXPECT_NE(std::string(lastError()).find("never connected: 2"), std::string::npos) << lastError();
  // Rank 1 learns that rank 0 gave up (its connection closes) instead of waiting forever.
  EXPECT_NE(exitCode(p1), 0);
}

TEST(Bootstrap, NoRankZeroIsATimeout) {
  tpcommUniqueId id;
  ASSERT_EQ(tpcommGetUniqueId(&id), tpcommSuccess);
  EXPECT_EQ(gatherAs(id, 1, 2, 300), static_cast<int>(tpcommTimeout));
  EXPECT_NE(std::string(lastError()).find("could not reach rank 0"), std::string::npos)
      << lastError();
}

TEST(Bootstrap, DisagreeingWorldSizeIsRefused) {
  tpcommUniqueId id;
  ASSERT_EQ(tpcommGetUniqueId(&id), tpcommSuccess);
  const pid_t p1 = forkRank(id, 1, 3, 3000);  // thinks there are 3 ranks
  EXPECT_EQ(gatherAs(id, 0, 2, 3000), static_cast<int>(tpcommInvalidArgument));
  EXPECT_NE(std::string(lastError()).find("nranks=3"), std::string::npos) << lastError();
  EXPECT_NE(exitCode(p1), 0);
}

TEST(Bootstrap, ForeignBytesAreNotAUniqueId) {
  tpcommUniqueId id;
  memset(&id, 0x5a, sizeof(id));
  EXPECT_EQ(gatherAs(id, 0, 2, 100), static_cast<int>(tpcommInvalidArgument));
  EXPECT_NE(std::string(lastError()).find("not made by tpcommGetUniqueId"), std::string::npos);
}

TEST(Bootstrap, UniqueIdsAreRandomAndNameDistinctSockets) {
  tpcommUniqueId a, b;
  ASSERT_EQ(tpcommGetUniqueId(&a), tpcommSuccess);
  ASSERT_EQ(tpcommGetUniqueId(&b), tpcommSuccess);
  UniqueIdData da, db;
  ASSERT_EQ(parseUniqueId(a, &da), tpcommSuccess);
  ASSERT_EQ(parseUniqueId(b, &db), tpcommSuccess);
  EXPECT_NE(rendezvousName(da), rendezvousName(db));
  EXPECT_EQ(rendezvousName(da).size(), 7u + 32u);  // "tpcomm." + 128 bits in hex
}

// Abstract sockets have no file permissions: rank 0 must refuse another user's process.
TEST(Bootstrap, AnotherUsersProcessIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a peer as another user";
  tpcommUniqueId id;
  ASSERT_EQ(tpcommGetUniqueId(&id), tpcommSuccess);
  const pid_t intruder = fork();
  if (intruder == 0) {
    if (setuid(65534) != 0) _exit(99);  // nobody
    _exit(gatherAs(id, 1, 2, 2000));
  }
  EXPECT_EQ(gatherAs(id, 0, 2, 1000), static_cast<int>(tpcommTimeout)) << lastError();
  EXPECT_NE(exitCode(intruder), 0);
}

}  // namespace
}  // namespace tpcomm
