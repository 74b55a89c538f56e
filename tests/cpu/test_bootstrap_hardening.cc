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
