// Hostile and mistaken peers against the real rendezvous (bootstrap.h): each one is dropped or
// refused clearly, the genuine ranks still meet, and every case is timed (a deadline of seconds
// must not become one per bad connection).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/rendezvous/bootstrap.h"
#include "comm/rendezvous/bootstrap_wire.h"
#include "comm/rendezvous/refusal_log.h"
#include "comm/rendezvous/unique_id.h"
#include "common/error.h"
#include "common/random.h"
#include "support/rendezvous_ranks.h"

namespace tpcomm {
namespace {

using namespace testing_rv;  // NOLINT: test helpers

using Clock = std::chrono::steady_clock;

// Rank 0 (this process, deadline 5 s) with a genuine rank 1 that starts after `bad` connected;
// both must meet in well under the deadline. Returns rank 0's seconds.
double genuineMeetDespite(const tpcommUniqueId& id, Child bad, int rank1_delay_ms = 200) {
  Child k1 = forkRank(id, 1, 2, 5000, 0, rank1_delay_ms);
  const auto t0 = Clock::now();
  EXPECT_EQ(gatherAs(id, 0, 2, 5000), 0) << lastError();
  const double s = secondsSince(t0);
  const Outcome o1 = finish(k1);
  EXPECT_EQ(o1.code, 0) << o1.error;
  stop(bad);
  printf("[ time     ] rank 0 met rank 1 after %.3f s (rank 1 started after %d ms)\n", s,
         rank1_delay_ms);
  return s;
}

tpcommUniqueId freshId() {
  tpcommUniqueId id;
  EXPECT_EQ(tpcommGetUniqueId(&id), tpcommSuccess);
  return id;
}

// A child that connects to the id's socket (knowing only its public name), runs act(fd), then
// keeps the connection open until it is stopped.
template <typename Act>
Child hostilePeer(const tpcommUniqueId& id, Act act) {
  const std::string name = nameOf(id);
  return forkChild([name, act] {
    const int fd = rawConnect(name, 3000);
    act(fd);
    std::this_thread::sleep_for(std::chrono::seconds(10));
    close(fd);
    return 0;
  });
}

TEST(BootstrapHostile, SilentPeerDoesNotHoldRankZero) {
  const tpcommUniqueId id = freshId();
  EXPECT_LT(genuineMeetDespite(id, hostilePeer(id, [](int) {})), 1.5);
}

// Past the handshake deadline (2 s) a silent connection is dropped and logged; rank 1 comes later.
TEST(BootstrapHostile, SilentPeerIsDroppedAtTheHandshakeDeadline) {
  const tpcommUniqueId id = freshId();
  Child silent = hostilePeer(id, [](int) {});
  ::testing::internal::CaptureStderr();
  const double s = genuineMeetDespite(id, silent, 2400);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_LT(s, 3.0);
  EXPECT_NE(log.find("too slow or silent"), std::string::npos) << log;
}

TEST(BootstrapHostile, TruncatedHelloIsDropped) {
  const tpcommUniqueId id = freshId();
  Child truncated = hostilePeer(id, [](int fd) {
    const char half[10] = {0x02, 0x00, 0x0b, 0x7c};  // the start of a header, then nothing
    rawWrite(fd, half, sizeof(half));
  });
  EXPECT_LT(genuineMeetDespite(id, truncated), 1.5);
}

TEST(BootstrapHostile, OversizedLengthIsDropped) {
  const tpcommUniqueId id = freshId();
  Child oversized = hostilePeer(id, [](int fd) {
    FrameHeader h{kWireMagic, kWireVersion, static_cast<uint32_t>(MsgType::kJoin), 0x7fffffffu, 0,
                  0};
    rawWrite(fd, &h, sizeof(h));
    // And the same as the old protocol's hello: {magic, rank 1, nranks 2, len 2^40}.
    const uint32_t old_hello[6] = {0x7c0b0075u, 1, 2, 0, 0, 256};
    rawWrite(fd, old_hello, sizeof(old_hello));
  });
  EXPECT_LT(genuineMeetDespite(id, oversized), 1.5);
}

// A stranger's Join with the wrong world size (and, not knowing the id, a wrong proof) is
// dropped; it does not end the rendezvous the way a rank that holds the id would.
TEST(BootstrapHostile, StrangersWrongWorldSizeIsDropped) {
  const tpcommUniqueId id = freshId();
  Child stranger = hostilePeer(id, [](int fd) {
    FrameHeader h{};
    Challenge ch{};
    rawRead(fd, &h, sizeof(h), 1000);
    rawRead(fd, &ch, sizeof(ch), 1000);
    Join j{};
    j.rank = 1;
    j.nranks = 3;
    j.len = kLen;
    const std::string f = frame(MsgType::kJoin, &j, sizeof(j));
    rawWrite(fd, f.data(), f.size());
  });
  EXPECT_LT(genuineMeetDespite(id, stranger), 1.5);
}

// An id with the same (public) socket name and a secret of its own: what a process that saw the
// name in /proc/net/unix can build.
tpcommUniqueId forgedId(const tpcommUniqueId& id) {
  UniqueIdData forged{};
  EXPECT_EQ(parseUniqueId(id, &forged), tpcommSuccess);
  EXPECT_EQ(randomBytes(forged.secret, sizeof(forged.secret)), tpcommSuccess);
  tpcommUniqueId fake{};
  memcpy(fake.internal, &forged, sizeof(forged));
  EXPECT_EQ(nameOf(fake), nameOf(id));
  return fake;
}

// A process that saw only the socket name (in /proc/net/unix) builds an id around it with a
// secret of its own and runs the real peer code: rank 0 refuses it, it gets no table, and the
// genuine rank 1 still joins.
TEST(BootstrapHostile, ImpostorWithOnlyTheNameIsRefused) {
  const tpcommUniqueId id = freshId();
  const tpcommUniqueId fake = forgedId(id);
  Child impostor = forkChild([&] { return gatherAs(fake, 1, 2, 3000); });
  Child k1 = forkRank(id, 1, 2, 5000, 0, 300);
  const auto t0 = Clock::now();
  EXPECT_EQ(gatherAs(id, 0, 2, 5000), 0) << lastError();
  EXPECT_LT(secondsSince(t0), 1.5);
  const Outcome bad = finish(impostor);
  EXPECT_NE(bad.code, 0) << "the impostor was given the handle table";
  EXPECT_NE(bad.error.find("does not know the unique id"), std::string::npos) << bad.error;
  const Outcome o1 = finish(k1);
  EXPECT_EQ(o1.code, 0) << o1.error;
}

// And the other way round: a process squatting on the name (it is rank 0 for the peers) but not
// holding the secret gets no handle: the peer checks rank 0's proof before sending its own.
TEST(BootstrapHostile, ImpostorRankZeroGetsNoHandle) {
  const tpcommUniqueId id = freshId();
  const tpcommUniqueId fake = forgedId(id);
  Child squatter = forkChild([&] { return gatherAs(fake, 0, 2, 2000); });
  const auto t0 = Clock::now();
  EXPECT_NE(gatherAs(id, 1, 2, 2000, 0), 0);
  EXPECT_LT(secondsSince(t0), 1.5);
  EXPECT_NE(std::string(lastError()).find("does not know the unique id"), std::string::npos)
      << lastError();
  stop(squatter);
}

// Two 2-rank jobs given one id, started 50 ms apart: the first meets; the second's rank 0 cannot
// bind the name and its rank 1 is told the rendezvous is complete. Nobody pairs across jobs.
TEST(BootstrapHostile, SecondJobWithTheSameIdFailsClearly) {
  const tpcommUniqueId id = freshId();
  Child a1 = forkRank(id, 1, 2, 5000, /*job=*/1);
  Child b0, b1;
  std::thread second_job([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    b0 = forkChild([&] { return gatherAs(id, 0, 2, 5000, /*job=*/2); });
    b1 = forkRank(id, 1, 2, 5000, /*job=*/2);
  });
  std::unique_ptr<RendezvousHold> hold;  // job 1's communicator lives on
  const auto t0 = Clock::now();
  EXPECT_EQ(gatherAs(id, 0, 2, 5000, /*job=*/1, &hold), 0) << lastError();
  EXPECT_TRUE(hold != nullptr);
  EXPECT_EQ(finish(a1).code, 0);
  second_job.join();
  const Outcome o0 = finish(b0);
  const Outcome o1 = finish(b1);
  EXPECT_LT(secondsSince(t0), 1.5);  // not the 5 s deadline
  EXPECT_EQ(o0.code, static_cast<int>(tpcommInvalidUsage)) << o0.error;
  EXPECT_NE(o0.error.find("already in use"), std::string::npos) << o0.error;
  EXPECT_EQ(o1.code, static_cast<int>(tpcommInvalidUsage)) << o1.error;
  EXPECT_NE(o1.error.find("complete"), std::string::npos) << o1.error;
  // Once job 1's communicator is gone, the id may serve again.
  hold.reset();
  Child c1 = forkRank(id, 1, 2, 5000, /*job=*/3);
  EXPECT_EQ(gatherAs(id, 0, 2, 5000, /*job=*/3), 0) << lastError();
  EXPECT_EQ(finish(c1).code, 0);
}

// A forked child of rank 0 that destroys its copy of the hold (a finalizer at its exit) must not
// stop the parent from answering latecomers: the thread and the eventfd are the parent's.
TEST(BootstrapHostile, HoldSurvivesAForkedChildsDestroy) {
  const tpcommUniqueId id = freshId();
  Child a1 = forkRank(id, 1, 2, 5000, /*job=*/1);
  std::unique_ptr<RendezvousHold> hold;
  ASSERT_EQ(gatherAs(id, 0, 2, 5000, /*job=*/1, &hold), 0) << lastError();
  EXPECT_EQ(finish(a1).code, 0);
  Child forked = forkChild([&] {
    hold.reset();
    return 0;
  });
  EXPECT_EQ(finish(forked).code, 0);
  const auto t0 = Clock::now();
  const Outcome late = finish(forkRank(id, 1, 2, 3000, /*job=*/2));
  EXPECT_LT(secondsSince(t0), 1.0);
  EXPECT_EQ(late.code, static_cast<int>(tpcommInvalidUsage)) << late.error;
  EXPECT_NE(late.error.find("complete"), std::string::npos) << late.error;
}

// Two processes claim one rank (two jobs in a race, or a launcher bug) while rank 0 still waits:
// the rendezvous ends for everyone, with the reason, at once.
TEST(BootstrapHostile, RankClaimedTwiceEndsTheRendezvousForAll) {
  const tpcommUniqueId id = freshId();
  Child x = forkRank(id, 1, 3, 5000, 1);
  Child y = forkRank(id, 1, 3, 5000, 2, 100);
  const auto t0 = Clock::now();
  EXPECT_EQ(gatherAs(id, 0, 3, 5000), static_cast<int>(tpcommInvalidUsage));
  EXPECT_NE(std::string(lastError()).find("claimed twice"), std::string::npos) << lastError();
  for (Child c : {x, y}) {
    const Outcome o = finish(c);
    EXPECT_EQ(o.code, static_cast<int>(tpcommInvalidUsage)) << o.error;
    EXPECT_NE(o.error.find("claimed twice"), std::string::npos) << o.error;
  }
  EXPECT_LT(secondsSince(t0), 1.5);
}

// Rank 0's queue full (here: a listener that never accepts, its backlog filled): connect must
// honour the 2 s deadline instead of blocking until the queue drains.
TEST(BootstrapHostile, FullBacklogConnectHonoursTheDeadline) {
  const tpcommUniqueId id = freshId();
  const std::string name = nameOf(id);
  socklen_t alen = 0;
  const sockaddr_un addr = socketAddress(name, &alen);
  Fd srv(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(bind(srv.fd, reinterpret_cast<const sockaddr*>(&addr), alen), 0);
  ASSERT_EQ(listen(srv.fd, 1), 0);
  std::vector<Fd> queued;
  for (int i = 0; i < 64; ++i) {
    Fd c(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (connect(c.fd, reinterpret_cast<const sockaddr*>(&addr), alen) != 0) break;
    queued.push_back(std::move(c));
  }
  ASSERT_LT(queued.size(), 64u) << "the backlog never filled";
  // If connect blocked, closing the listener after 6 s would end it; the test then fails on time.
  std::atomic<bool> done{false};
  std::thread closer([&] {
    for (int i = 0; i < 600 && !done; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    close(srv.fd);  // wakes a blocked connect (shutdown would not)
    srv.fd = -1;
  });
  const auto t0 = Clock::now();
  EXPECT_EQ(gatherAs(id, 1, 2, 2000), static_cast<int>(tpcommTimeout));
  const double s = secondsSince(t0);
  done = true;
  closer.join();
  printf("[ time     ] connect to a full queue gave up after %.3f s (deadline 2 s)\n", s);
  EXPECT_LT(s, 3.0);
  EXPECT_GT(s, 1.9);
  EXPECT_NE(std::string(lastError()).find("connection queue"), std::string::npos) << lastError();
}

// Counts the lines of `log` that contain `what`.
int linesWith(const std::string& log, const std::string& what) {
  int n = 0;
  size_t at = 0;
  while ((at = log.find(what, at)) != std::string::npos) {
    ++n;
    at += what.size();
  }
  return n;
}

// Runs a flood of `connections` bad connections (made by flood()) against rank 0, with a genuine
// rank 1 arriving late; returns rank 0's log.
template <typename Flood>
std::string logOfFlood(const tpcommUniqueId& id, Flood flood) {
  Child flooder = forkChild(flood);
  ::testing::internal::CaptureStderr();
  const double s = genuineMeetDespite(id, flooder, 800);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_LT(s, 3.0);
  const size_t summary = log.find("more connections than shown");
  if (summary != std::string::npos) {
    const size_t begin = log.rfind('\n', summary) + 1;
    printf("[ log      ] %s\n", log.substr(begin, log.find('\n', summary) - begin).c_str());
  }
  return log;
}

TEST(BootstrapHostile, FloodOfBadConnectionsIsLoggedRateLimited) {
  const tpcommUniqueId id = freshId();
  const std::string name = nameOf(id);
  const std::string log = logOfFlood(id, [&] {
    const auto t0 = Clock::now();
    for (int i = 0; i < 400 && secondsSince(t0) < 0.7; ++i) {
      const int fd = rawConnect(name, 2000);
      const char junk[24] = "not the protocol at all";
      rawWrite(fd, junk, sizeof(junk));
      close(fd);
    }
    return 0;
  });
  const int lines = linesWith(log, "refused a connection");
  EXPECT_LE(lines, kShownRefusals) << log;
  EXPECT_GE(lines, 1) << log;
  EXPECT_EQ(linesWith(log, "more connections than shown"), 1) << log;
}

TEST(BootstrapHostile, FloodFromAnotherUserIsLoggedRateLimited) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run the flood as another user";
  const tpcommUniqueId id = freshId();
  const std::string name = nameOf(id);
  const std::string log = logOfFlood(id, [&] {
    if (setuid(65534) != 0) return 99;
    const auto t0 = Clock::now();
    for (int i = 0; i < 2000 && secondsSince(t0) < 0.7; ++i) close(rawConnect(name, 2000));
    return 0;
  });
  EXPECT_LE(linesWith(log, "refused a connection"), kShownRefusals) << log;
  EXPECT_EQ(linesWith(log, "more connections than shown"), 1) << log;
}

}  // namespace
}  // namespace tpcomm
