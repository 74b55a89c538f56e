// The rendezvous against the third hostile review (issue 36): an OpenSSL configuration that
// cannot load its provider (a FIPS host), strangers that fill the handshake slots, a failing
// peer's error reaching rank 0, the holder of a squatted name, and the uid that is compared.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "comm/rendezvous/bootstrap.h"
#include "comm/rendezvous/bootstrap_wire.h"
#include "comm/rendezvous/unique_id.h"
#include "common/error.h"
#include "common/random.h"
#include "support/rendezvous_ranks.h"

namespace tpcomm {
namespace {

using namespace testing_rv;  // NOLINT: test helpers

using Clock = std::chrono::steady_clock;

tpcommUniqueId freshId() {
  tpcommUniqueId id;
  EXPECT_EQ(tpcommGetUniqueId(&id), tpcommSuccess);
  return id;
}

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// ---- Item 1: an OpenSSL configuration whose provider cannot load.

// What a FIPS host's openssl.cnf does, with a FIPS module that is not there: every fetch from
// libcrypto's default context fails once the configuration is loaded.
std::string writeBrokenOpenSslConfig(const std::string& dir) {
  const std::string path = dir + "/openssl.cnf";
  FILE* f = fopen(path.c_str(), "w");
  if (!f) return "";
  fprintf(f,
          "openssl_conf = openssl_init\n"
          "[openssl_init]\n"
          "providers = provider_sect\n"
          "alg_section = algorithm_sect\n"
          "[provider_sect]\n"
          "fips = fips_sect\n"
          "[fips_sect]\n"
          "activate = 1\n"
          "module = %s/no-such-fips-module.so\n"
          "[algorithm_sect]\n"
          "default_properties = fips=yes\n",
          dir.c_str());
  fclose(f);
  return path;
}

// OPENSSL_CONF must be set before the first use of OpenSSL, so the rendezvous runs in a fresh
// process: this test binary, re-run with only the child test below.
TEST(BootstrapFips, RanksMeetUnderAConfigWhoseProviderCannotLoad) {
  char dir[] = "/tmp/tpcomm-fips-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string conf = writeBrokenOpenSslConfig(dir);
  ASSERT_FALSE(conf.empty());
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("OPENSSL_CONF", conf.c_str(), 1);
    setenv("TPCOMM_TEST_FIPS_CHILD", "1", 1);
    execl("/proc/self/exe", "tpcomm_cpu_tests", "--gtest_filter=BootstrapFipsChild.*",
          static_cast<char*>(nullptr));
    _exit(97);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
      << "the child test failed (status " << st << "): see its output above";
  unlink(conf.c_str());
  rmdir(dir);
}

TEST(BootstrapFipsChild, ThreeRanksMeet) {
  if (!getenv("TPCOMM_TEST_FIPS_CHILD"))
    GTEST_SKIP() << "run by BootstrapFips.RanksMeetUnderAConfigWhoseProviderCannotLoad";
  // The configuration bites: libcrypto's default context cannot make an HMAC-SHA256 here (in a
  // child, so that this process's OpenSSL state stays untouched for the ranks forked below).
  Child probe = forkChild([] {
    const unsigned char key[32] = {};
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    return HMAC(EVP_sha256(), key, sizeof(key), key, sizeof(key), out, &n) == nullptr ? 0 : 1;
  });
  EXPECT_EQ(finish(probe).code, 0) << "HMAC-SHA256 works in libcrypto's default context: the "
                                      "configuration does not break it, so this test shows nothing";
  // And a process that used libcrypto's default context before tpcomm (so loaded the
  // configuration, and failed), as a host application may have: its ranks meet too.
  Child host = forkChild([] {
    const unsigned char key[32] = {};
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (HMAC(EVP_sha256(), key, sizeof(key), key, sizeof(key), out, &n) != nullptr) return 90;
    tpcommUniqueId again;
    if (tpcommGetUniqueId(&again) != tpcommSuccess) return 91;
    Child k = forkRank(again, 1, 2, 5000);
    const int r0 = gatherAs(again, 0, 2, 5000);
    const Outcome o = finish(k);
    return r0 != 0 ? r0 : o.code;
  });
  const tpcommUniqueId id = freshId();
  Child k1 = forkRank(id, 1, 3, 5000);
  Child k2 = forkRank(id, 2, 3, 5000);
  EXPECT_EQ(gatherAs(id, 0, 3, 5000), 0) << lastError();
  for (Child k : {k1, k2}) {
    const Outcome o = finish(k);
    EXPECT_EQ(o.code, 0) << o.error;
  }
  const Outcome oh = finish(host);
  EXPECT_EQ(oh.code, 0) << oh.error;
}

// A peer whose own handshake fails (here: one that says so in the frame a failing tpcomm peer sends
// in place of its Join) is named by rank 0 as what it is, not as a rank that never came.
TEST(BootstrapHardening, RankZeroReportsAPeersFailedHandshake) {
  const tpcommUniqueId id = freshId();
  const std::string name = nameOf(id);
  Child failing = forkChild([name] {
    const int fd = rawConnect(name, 3000);
    FrameHeader h{};
    Challenge ch{};
    rawRead(fd, &h, sizeof(h), 1000);
    rawRead(fd, &ch, sizeof(ch), 1000);
    const std::string text =
        "bootstrap: rank 1: HMAC-SHA256 (OpenSSL "
        "libcrypto) failed: error:0308010C:test: the "
        "provider is unhappy";
    const FrameHeader r{kWireMagic,
                        kWireVersion,
                        static_cast<uint32_t>(MsgType::kReason),
                        static_cast<uint32_t>(text.size()),
                        static_cast<int32_t>(tpcommSystemError),
                        1};  // the rank it is
    rawWrite(fd, &r, sizeof(r));
    rawWrite(fd, text.data(), text.size());
    std::this_thread::sleep_for(std::chrono::seconds(5));
    close(fd);
    return 0;
  });
  EXPECT_EQ(gatherAs(id, 0, 2, 1500), static_cast<int>(tpcommTimeout));
  const std::string err = lastError();
  stop(failing);
  EXPECT_TRUE(contains(err, "rank 1 connected but its handshake failed")) << err;
  EXPECT_TRUE(contains(err, "the provider is unhappy")) << err;
  EXPECT_FALSE(contains(err, "never connected: 1")) << err;
}

// And the real peer code: a rank whose HMAC fails (made to, in its own process) fails with
// libcrypto's reason, and tells rank 0, which names that failure at its deadline.
TEST(BootstrapHardening, FailingPeerTellsRankZeroWhy) {
  const tpcommUniqueId id = freshId();
  Child k1 = forkChild([id] {
    failHandshakeMacForTesting("error:12800067:DSO support routines::could not load the module");
    return gatherAs(id, 1, 2, 3000);
  });
  EXPECT_EQ(gatherAs(id, 0, 2, 1500), static_cast<int>(tpcommTimeout));
  const std::string err = lastError();
  const Outcome o1 = finish(k1);
  EXPECT_EQ(o1.code, static_cast<int>(tpcommSystemError)) << o1.error;
  EXPECT_TRUE(contains(o1.error, "HMAC-SHA256 (OpenSSL libcrypto) failed: error:12800067"))
      << o1.error;
  EXPECT_TRUE(contains(err, "rank 1 connected but its handshake failed")) << err;
  EXPECT_TRUE(contains(err, "could not load the module")) << err;
  EXPECT_FALSE(contains(err, "never connected")) << err;
}

// ---- Item 2: strangers in the handshake slots.

// A genuine rank 1 that has proved the secret stalls before sending its handle while a stranger
// (knowing only the name) opens more connections than there are handshake slots: the proven
// connection keeps its slot and receives the table.
TEST(BootstrapHardening, ConnectionThatProvedTheSecretIsNeverEvicted) {
  const tpcommUniqueId id = freshId();
  const std::string name = nameOf(id);
  UniqueIdData d{};
  ASSERT_EQ(parseUniqueId(id, &d), tpcommSuccess);
  Child slow = forkChild([name, d] {
    const int fd = rawConnect(name, 3000);
    FrameHeader h{};
    Challenge ch{};
    if (rawRead(fd, &h, sizeof(h), 1000) != sizeof(h) ||
        rawRead(fd, &ch, sizeof(ch), 1000) != sizeof(ch))
      return 2;
    Join j{};
    j.rank = 1;
    j.nranks = 2;
    j.len = kLen;
    if (randomBytes(j.nonce, sizeof(j.nonce)) != tpcommSuccess ||
        handshakeMac(d, MacRole::kPeer, ch.nonce, j.nonce, 1, 2, kLen, j.mac) != tpcommSuccess)
      return 3;
    const std::string join = frame(MsgType::kJoin, &j, sizeof(j));
    rawWrite(fd, join.data(), join.size());
    Accept acc{};
    if (rawRead(fd, &h, sizeof(h), 1000) != sizeof(h) ||
        h.type != static_cast<uint32_t>(MsgType::kAccept) ||
        rawRead(fd, &acc, sizeof(acc), 1000) != sizeof(acc))
      return 4;
    std::vector<int> strangers;
    for (int i = 0; i < 100; ++i) strangers.push_back(rawConnect(name, 1000));
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // rank 0 takes them all in
    const std::vector<char> mine = blob(1);
    const std::string b = frame(MsgType::kBlob, mine.data(), mine.size());
    rawWrite(fd, b.data(), b.size());
    if (rawRead(fd, &h, sizeof(h), 2000) != sizeof(h)) return 5;
    if (h.type == static_cast<uint32_t>(MsgType::kReason)) return 6;  // evicted
    return h.type == static_cast<uint32_t>(MsgType::kTable) ? 0 : 7;
  });
  const auto t0 = Clock::now();
  EXPECT_EQ(gatherAs(id, 0, 2, 3000), 0) << lastError();
  EXPECT_LT(secondsSince(t0), 2.0);
  const Outcome o = finish(slow);
  EXPECT_EQ(o.code, 0) << "6: rank 0 dropped the connection that had proved the secret";
}

// A stranger floods the socket with silent connections (thousands: far more than the 64 handshake
// slots) for 1.5 s while seven genuine ranks join: every genuine rank gets in (connecting again if
// rank 0 dropped a connection of its before it proved the secret), soon after the flood ends.
Child flooder(const std::string& name, double seconds) {
  return forkChild([name, seconds] {
    // Busy for `seconds`: leave the cores to the ranks (and to tests that ctest runs alongside).
    setpriority(PRIO_PROCESS, 0, 10);
    rlimit lim{};
    getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 4096);
    setrlimit(RLIMIT_NOFILE, &lim);
    const size_t keep = lim.rlim_cur > 128 ? static_cast<size_t>(lim.rlim_cur) - 64 : 64;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path + 1, name.data(), name.size());
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    std::deque<int> open;  // held open and silent; the oldest closed beyond `keep`
    int made = 0;
    const auto t0 = Clock::now();
    while (secondsSince(t0) < seconds) {
      const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
        close(fd);
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        continue;
      }
      ++made;
      open.push_back(fd);
      if (open.size() > keep) {
        close(open.front());
        open.pop_front();
      }
    }
    for (int fd : open) close(fd);
    printf("[ flood    ] %d connections in %.1f s\n", made, seconds);
    fflush(stdout);
    return made > 500 ? 0 : 1;
  });
}

TEST(BootstrapHardening, GenuineRanksMeetDuringAFloodOfStrangers) {
  const tpcommUniqueId id = freshId();
  const std::string name = nameOf(id);
  constexpr double kFloodSeconds = 1.5;
  constexpr int kWorld = 8;
  Child floods[2] = {flooder(name, kFloodSeconds), flooder(name, kFloodSeconds)};
  std::vector<Child> ranks;
  for (int r = 1; r < kWorld; ++r) ranks.push_back(forkRank(id, r, kWorld, 8000, 0, 100 * r));
  const auto t0 = Clock::now();
  EXPECT_EQ(gatherAs(id, 0, kWorld, 8000), 0) << lastError();
  const double s = secondsSince(t0);
  printf("[ time     ] the genuine ranks met after %.3f s\n", s);
  EXPECT_LT(s, kFloodSeconds + 2.5);
  for (Child& k : ranks) {
    const Outcome o = finish(k);
    EXPECT_EQ(o.code, 0) << o.error;
  }
  for (Child& f : floods) EXPECT_EQ(finish(f).code, 0) << "no flood: this test shows nothing";
}

// ---- Item 6: the holder of a name in use.

// A process bound to the id's name (listening, or not: then only /proc tells) that is not a
// tpcomm rank 0 of ours: rank 0 names its pid and uid instead of guessing it is a communicator.
Child holderOf(const std::string& name, uid_t uid, int ready_fd, bool listens) {
  return forkChild([name, uid, ready_fd, listens] {
    if (uid != geteuid() && setresuid(uid, uid, uid) != 0) return 90;
    socklen_t alen = 0;
    const sockaddr_un addr = socketAddress(name, &alen);
    const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (bind(s, reinterpret_cast<const sockaddr*>(&addr), alen) != 0 ||
        (listens && listen(s, 8) != 0))
      return 91;
    const char one = 1;
    if (write(ready_fd, &one, 1) != 1) return 92;
    std::this_thread::sleep_for(std::chrono::seconds(10));
    return 0;
  });
}

void expectHolderNamed(uid_t uid, const char* who, bool listens = true) {
  const tpcommUniqueId id = freshId();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  Child holder = holderOf(nameOf(id), uid, ready[1], listens);
  close(ready[1]);
  char one = 0;
  ASSERT_EQ(read(ready[0], &one, 1), 1) << "the holder could not bind the name";
  close(ready[0]);
  EXPECT_EQ(gatherAs(id, 0, 2, 1000), static_cast<int>(tpcommInvalidUsage));
  const std::string err = lastError();
  stop(holder);
  EXPECT_TRUE(contains(err, "already in use")) << err;
  EXPECT_TRUE(contains(err, "pid " + std::to_string(holder.pid))) << err;
  EXPECT_TRUE(contains(err, "uid " + std::to_string(uid))) << err;
  EXPECT_TRUE(contains(err, who)) << err;
}

TEST(BootstrapHardening, NameInUseNamesTheHoldersPid) {
  expectHolderNamed(geteuid(), "another process of this user");
}

TEST(BootstrapHardening, NameBoundWithoutListeningNamesTheHoldersPid) {
  expectHolderNamed(geteuid(), "another process of this user", /*listens=*/false);
}

TEST(BootstrapHardening, NameInUseByAnotherUserSaysSo) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to bind the name as another user";
  expectHolderNamed(65534, "another user");
}

// ---- Item 7: the uid compared is the effective one (what SO_PEERCRED reports, and what the
// trusted-file checks use).

TEST(BootstrapHardening, RanksWhoseRealAndEffectiveUidsDifferMeet) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make the real and effective uids differ";
  Child job = forkChild([] {
    if (setresuid(0, 65534, 0) != 0) return 90;  // real root, effective nobody
    tpcommUniqueId id;
    if (tpcommGetUniqueId(&id) != tpcommSuccess) return 91;
    Child k1 = forkRank(id, 1, 2, 3000);
    const int r0 = gatherAs(id, 0, 2, 3000);
    const std::string e0 = lastError();
    const Outcome o1 = finish(k1);
    if (r0 == 0 && o1.code == 0) return 0;
    fail(tpcommInternalError, "rank 0: %d %s | rank 1: %d %s", r0, e0.c_str(), o1.code,
         o1.error.c_str());
    return 1;
  });
  const Outcome o = finish(job);
  EXPECT_EQ(o.code, 0) << o.error;
}

}  // namespace
}  // namespace tpcomm
