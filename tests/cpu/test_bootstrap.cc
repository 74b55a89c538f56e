// The Unix-socket rendezvous, across real processes (fork: no CUDA is involved): the all-gather,
// and every way it can fail clearly instead of hanging. Hostile peers: test_bootstrap_hostile.cc.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "comm/rendezvous/bootstrap.h"
#include "comm/rendezvous/unique_id.h"
#include "common/error.h"
#include "support/rendezvous_ranks.h"

namespace tpcomm {
namespace {

using namespace testing_rv;  // NOLINT: test helpers

TEST(Bootstrap, FourProcessesAllGather) {
  tpcommUniqueId id;
  ASSERT_EQ(tpcommGetUniqueId(&id), tpcommSuccess);
  std::vector<Child> kids;
  for (int r = 3; r >= 1; --r) kids.push_back(forkRank(id, r, 4, 10000));  // peers first: retry
  EXPECT_EQ(gatherAs(id, 0, 4, 10000), 0) << lastError();
  for (Child& k : kids) {
    const Outcome o = finish(k);
    EXPECT_EQ(o.code, 0) << o.error;
  }
}

// Rank 0 gives up on a missing rank, and the rank that did come learns why from rank 0 itself
// (its code and its text), not from a reset connection.
TEST(Bootstrap, MissingRankIsATimeoutNamingIt) {
  tpcommUniqueId id;
  ASSERT_EQ(tpcommGetUniqueId(&id), tpcommSuccess);
  Child k1 = forkRank(id, 1, 3, 5000);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(gatherAs(id, 0, 3, 700), static_cast<int>(tpcommTimeout));
  EXPECT_LT(secondsSince(t0), 3.0);
  EXPECT_NE(std::string(lastError()).find("never connected: 2"), std::string::npos) << lastError();
  const Outcome o = finish(k1);
  EXPECT_LT(secondsSince(t0), 3.0);  // not its own 5 s deadline
  EXPECT_EQ(o.code, static_cast<int>(tpcommTimeout)) << o.error;
  EXPECT_NE(o.error.find("rank 0 (pid"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("never connected: 2"), std::string::npos) << o.error;
}

TEST(Bootstrap, NoRankZeroIsATimeout) {
  tpcommUniqueId id;
  ASSERT_EQ(tpcommGetUniqueId(&id), tpcommSuccess);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(gatherAs(id, 1, 2, 300), static_cast<int>(tpcommTimeout));
  EXPECT_LT(secondsSince(t0), 1.0);
  EXPECT_NE(std::string(lastError()).find("could not reach rank 0"), std::string::npos)
      << lastError();
}

// A rank that holds the id but disagrees on the world size ends the rendezvous at once, and it is
// told why (by rank 0), well before either deadline.
TEST(Bootstrap, DisagreeingWorldSizeIsRefused) {
  tpcommUniqueId id;
  ASSERT_EQ(tpcommGetUniqueId(&id), tpcommSuccess);
  Child k1 = forkRank(id, 1, 3, 5000);  // thinks there are 3 ranks
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(gatherAs(id, 0, 2, 5000), static_cast<int>(tpcommInvalidArgument));
  EXPECT_NE(std::string(lastError()).find("nranks=3"), std::string::npos) << lastError();
  const Outcome o = finish(k1);
  EXPECT_LT(secondsSince(t0), 2.0);
  EXPECT_EQ(o.code, static_cast<int>(tpcommInvalidArgument)) << o.error;
  EXPECT_NE(o.error.find("nranks=3, rank 0 with nranks=2"), std::string::npos) << o.error;
}

TEST(Bootstrap, ForeignBytesAreNotAUniqueId) {
  tpcommUniqueId id;
  memset(&id, 0x5a, sizeof(id));
  EXPECT_EQ(gatherAs(id, 0, 2, 100), static_cast<int>(tpcommInvalidArgument));
  EXPECT_NE(std::string(lastError()).find("not made by tpcommGetUniqueId"), std::string::npos);
}

// The socket name is public (/proc/net/unix); it must not be, or reveal, the secret.
TEST(Bootstrap, UniqueIdsAreRandomAndTheNameTellsNothingOfTheSecret) {
  tpcommUniqueId a, b;
  ASSERT_EQ(tpcommGetUniqueId(&a), tpcommSuccess);
  ASSERT_EQ(tpcommGetUniqueId(&b), tpcommSuccess);
  UniqueIdData da, db;
  ASSERT_EQ(parseUniqueId(a, &da), tpcommSuccess);
  ASSERT_EQ(parseUniqueId(b, &db), tpcommSuccess);
  EXPECT_NE(rendezvousName(da), rendezvousName(db));
  EXPECT_NE(memcmp(da.secret, db.secret, sizeof(da.secret)), 0);
  EXPECT_EQ(rendezvousName(da).size(), 7u + 32u);  // "tpcomm." + 128 bits in hex
  // Another secret, the same name: the name is not computed from the secret.
  UniqueIdData other = da;
  other.secret[0] ^= 1;
  EXPECT_EQ(rendezvousName(other), rendezvousName(da));
  // No 4 consecutive secret bytes appear in the name, in hex.
  static const char* hex = "0123456789abcdef";
  for (size_t i = 0; i + 4 <= sizeof(da.secret); ++i) {
    std::string h;
    for (size_t k = i; k < i + 4; ++k) (h += hex[da.secret[k] >> 4]) += hex[da.secret[k] & 15];
    EXPECT_EQ(rendezvousName(da).find(h), std::string::npos);
  }
}

// Abstract sockets have no file permissions: rank 0 must refuse another user's process.
TEST(Bootstrap, AnotherUsersProcessIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a peer as another user";
  tpcommUniqueId id;
  ASSERT_EQ(tpcommGetUniqueId(&id), tpcommSuccess);
  Child intruder = forkChild([&] {
    if (setuid(65534) != 0) return 99;  // nobody
    return gatherAs(id, 1, 2, 2000);
  });
  EXPECT_EQ(gatherAs(id, 0, 2, 1000), static_cast<int>(tpcommTimeout)) << lastError();
  EXPECT_NE(finish(intruder).code, 0);
}

}  // namespace
}  // namespace tpcomm
