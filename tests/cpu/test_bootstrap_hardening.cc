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

#include "comm/bootstrap.h"
#include "comm/bootstrap_wire.h"
#include "comm/unique_id.h"
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
  const tpcommUniqueId id = freshId();
  Child k1 = forkRank(id, 1, 3, 5000);
  Child k2 = forkRank(id, 2, 3, 5000);
  EXPECT_EQ(gatherAs(id, 0, 3, 5000), 0) << lastError();
  for (Child k : {k1, k2}) {
    const Outcome o = finish(k);
    EXPECT_EQ(o.code, 0) << o.error;
  }
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
