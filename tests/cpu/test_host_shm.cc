// The host transport's shared-memory segment (transport/host_shm.h,
// comm/lifecycle/host_transport.h): a full or small /dev/shm is a clear error naming the sizes,
// never a SIGBUS; no failure leaves a name or pages in /dev/shm; a communicator over P2P creates no
// segment. The /dev/shm cases run in a child with a private mount namespace (as root, or in a user
// namespace of its own) and a tiny tmpfs over /dev/shm (skipped where the machine allows neither).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm.h"
#include "comm/lifecycle/host_transport.h"
#include "common/error.h"
#include "transport/host_shm.h"

namespace tpcomm {
namespace {

constexpr size_t kSmallSlot = 64u << 10;  // the smallest host slot: a ~8.5 MiB segment at world 2
constexpr int kSkip = 77;

struct Child {
  int exit_code = -1;  // kSkip: no private mount namespace here
  int signal = 0;      // the signal that killed it (SIGBUS on the old code)
  std::string out;     // what body returned (or why it was skipped)
};

// Without the right to make a mount namespace (not root): a user namespace that maps this user to
// itself gives it, where the machine allows unprivileged user namespaces.
bool inOwnUserNamespace() {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
  auto put = [](const char* path, const std::string& text) {
    const int fd = open(path, O_WRONLY);
    const bool ok = fd >= 0 && write(fd, text.data(), text.size()) == ssize_t(text.size());
    if (fd >= 0) close(fd);
    return ok;
  };
  return put("/proc/self/setgroups", "deny") &&
         put("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") &&
         put("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1");
}

// Runs body in a child process whose /dev/shm is a private tmpfs of tmpfs_bytes (filled up first
// when `fill`); body's text comes back through a pipe.
Child inPrivateShm(size_t tmpfs_bytes, bool fill, const std::function<std::string()>& body) {
  Child res;
  int fds[2];
  if (pipe(fds) != 0) return res;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    auto finish = [&](const std::string& text, int code) {
      if (write(fds[1], text.data(), text.size()) < 0) code = 3;
      _exit(code);
    };
    if (unshare(CLONE_NEWNS) != 0 && !inOwnUserNamespace())
      finish(std::string("unshare(CLONE_NEWNS), and of a user namespace: ") + strerror(errno),
             kSkip);
    if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      finish(std::string("making the mounts private: ") + strerror(errno), kSkip);
    const std::string opts = "size=" + std::to_string(tmpfs_bytes) + ",mode=1777";
    if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0)
      finish(std::string("mounting a tmpfs on /dev/shm: ") + strerror(errno), kSkip);
    if (fill) {
      const int f = open("/dev/shm/filler", O_CREAT | O_WRONLY, 0600);
      static char page[4096];
      while (write(f, page, sizeof(page)) > 0) {
      }
      close(f);
    }
    finish(body(), 0);
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) res.out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  res.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return res;
}

#define SKIP_WITHOUT_NAMESPACE(child)                                                              \
  do {                                                                                             \
    if ((child).exit_code == kSkip)                                                                \
      GTEST_SKIP() << "no private mount namespace on this machine (" << (child).out                \
                   << "): the small-/dev/shm cases need one (root, CAP_SYS_ADMIN or unprivileged " \
                      "user namespaces, and unshare not filtered)";                                \
  } while (0)

// The entries of /dev/shm, space-separated ("" when empty).
std::string devShmEntries() {
  std::string s;
  DIR* d = opendir("/dev/shm");
  if (!d) return "?";
  while (const dirent* e = readdir(d))
    if (e->d_name[0] != '.') s += (s.empty() ? "" : " ") + std::string(e->d_name);
  closedir(d);
  return s;
}

size_t devShmFree() {
  struct statvfs v;
  return statvfs("/dev/shm", &v) == 0 ? static_cast<size_t>(v.f_bavail) * v.f_frsize : 0;
}

bool exists(const std::string& shm_name) {
  struct stat st;
  return stat(("/dev/shm" + shm_name).c_str(), &st) == 0;
}

std::string freshName() {
  std::string name;
  EXPECT_EQ(hostSegmentName(&name), tpcommSuccess);
  return name;
}

// Creation's result, its message and what /dev/shm holds afterwards.
std::string createReport(int world, size_t slot) {
  HostSegment seg;
  const tpcommResult_t r = hostSegmentCreate(freshName(), world, slot, &seg);
  return std::string(resultName(r)) + "|" + lastError() + "|" + devShmEntries();
}

TEST(HostShm, FullDevShmIsAnErrorNotASigbus) {
  const Child c = inPrivateShm(1u << 20, /*fill=*/true, [] { return createReport(2, kSmallSlot); });
  SKIP_WITHOUT_NAMESPACE(c);
  ASSERT_EQ(c.signal, 0) << "creating the segment killed the process with signal " << c.signal
                         << " (" << strsignal(c.signal) << ")";
  ASSERT_EQ(c.exit_code, 0) << c.out;
  const std::string bytes = std::to_string(hostSegmentBytes(2, kSmallSlot));
  EXPECT_EQ(c.out.find("tpcommSystemError|"), 0u) << c.out;
  EXPECT_NE(c.out.find("cannot hold the " + bytes + "-byte host segment: 0 bytes free of 1048576"),
            std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("--shm-size="), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("TPCOMM_BUFFER_BYTES"), std::string::npos) << c.out;
  EXPECT_EQ(c.out.substr(c.out.rfind('|') + 1), "filler") << "left behind: " << c.out;
}

TEST(HostShm, SegmentLargerThanDevShmIsRefusedAndLeavesNothing) {
  const Child c = inPrivateShm(1u << 20, false, [] {
    const size_t before = devShmFree();
    const std::string report = createReport(2, kSmallSlot);
    return report + "|" + (devShmFree() == before ? "pages freed" : "pages held");
  });
  SKIP_WITHOUT_NAMESPACE(c);
  ASSERT_EQ(c.signal, 0) << strsignal(c.signal);
  const std::string bytes = std::to_string(hostSegmentBytes(2, kSmallSlot));
  EXPECT_EQ(c.out.find("tpcommSystemError|"), 0u) << c.out;
  EXPECT_NE(c.out.find("cannot hold the " + bytes + "-byte host segment: 1048576 bytes free of " +
                       "1048576 (posix_fallocate: No space left on device). Give it at least 9 MiB "
                       "(docker run --shm-size=9m"),
            std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("||pages freed"), std::string::npos) << "not clean: " << c.out;
}

// A segment that no rank attaches to (its peers failed, or never came) goes with rank 0's.
TEST(HostShm, CreatedSegmentIsReservedAndRemovedWithItsOwner) {
  const Child c = inPrivateShm(64u << 20, false, [] {
    const size_t before = devShmFree();
    std::string out;
    {
      HostSegment seg;
      if (hostSegmentCreate(freshName(), 2, kSmallSlot, &seg) != tpcommSuccess)
        return out + lastError();
      out += "created:" + devShmEntries();
      out +=
          before - devShmFree() >= hostSegmentBytes(2, kSmallSlot) ? "|reserved" : "|not reserved";
      hostSegmentRelease(&seg);
      out += "|released:" + devShmEntries();
    }
    return out + (devShmFree() == before ? "|pages freed" : "|pages held");
  });
  SKIP_WITHOUT_NAMESPACE(c);
  EXPECT_EQ(c.signal, 0);
  EXPECT_EQ(c.out.find("created:tpcomm-"), 0u) << c.out;
  EXPECT_NE(c.out.find("|reserved|released:|pages freed"), std::string::npos) << c.out;
}

TEST(HostShm, PeerWaitsForRank0WithADeadline) {
  const std::string name = freshName();
  HostSegment seg;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(hostSegmentAttach(name, 2, kSmallSlot, 200, &seg), tpcommTimeout);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(ms, 200);
  EXPECT_LT(ms, 2000);
  const std::string msg = lastError();
  EXPECT_NE(msg.find("rank 0's segment " + name + " does not exist after 200 ms"),
            std::string::npos)
      << msg;
  EXPECT_FALSE(exists(name));

  // Rank 0 creates it 100 ms late: the peer gets past the wait (then, without a GPU, fails to
  // register it with CUDA; with one, it attaches).
  HostSegment created;
  std::thread rank0([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(hostSegmentCreate(name, 2, kSmallSlot, &created), tpcommSuccess);
  });
  const tpcommResult_t r = hostSegmentAttach(name, 2, kSmallSlot, 5000, &seg);
  rank0.join();
  EXPECT_NE(r, tpcommTimeout) << lastError();
  hostSegmentRelease(&seg);
  EXPECT_TRUE(exists(name));  // one of two ranks attached: the name is still needed
  hostSegmentRelease(&created);
  EXPECT_FALSE(exists(name));
}

TEST(HostShm, ForeignOrMismatchedSegmentIsRefused) {
  const std::string name = freshName();
  HostSegment created, seg;
  ASSERT_EQ(hostSegmentCreate(name, 2, kSmallSlot, &created), tpcommSuccess);
  EXPECT_EQ(hostSegmentAttach(name, 3, kSmallSlot, 100, &seg), tpcommRemoteError);
  EXPECT_NE(std::string(lastError())
                .find("(9114624 bytes, world 2, slot 65536 bytes) does not "
                      "match this communicator (world 3"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(hostSegmentCreate(name, 2, kSmallSlot, &seg), tpcommSystemError);  // O_EXCL
  ASSERT_EQ(chmod(("/dev/shm" + name).c_str(), 0644), 0);
  EXPECT_EQ(hostSegmentAttach(name, 2, kSmallSlot, 100, &seg), tpcommRemoteError);
  EXPECT_NE(std::string(lastError()).find("is not this user's own"), std::string::npos)
      << lastError();
  hostSegmentRelease(&created);
  EXPECT_FALSE(exists(name));
}

// Every rank counts itself in once it has the segment mapped, before the CUDA registration
// (which fails without a GPU): the last of them unlinks the name, so a rank 0 killed from then on
// leaves nothing in /dev/shm.
TEST(HostShm, NameGoesOnceEveryRankHasMappedTheSegment) {
  const std::string name = freshName();
  HostSegment created, a, b;
  ASSERT_EQ(hostSegmentCreate(name, 2, kSmallSlot, &created), tpcommSuccess) << lastError();
  const tpcommResult_t ra = hostSegmentAttach(name, 2, kSmallSlot, 1000, &a);
  EXPECT_NE(ra, tpcommTimeout) << lastError();
  EXPECT_TRUE(exists(name)) << "unlinked while a rank had not mapped it yet";
  const tpcommResult_t rb = hostSegmentAttach(name, 2, kSmallSlot, 1000, &b);
  EXPECT_NE(rb, tpcommTimeout) << lastError();
  EXPECT_FALSE(exists(name)) << "both ranks have mapped " << name << " (attach: " << resultName(ra)
                             << ", " << resultName(rb) << ")";
  hostSegmentRelease(&b);
  hostSegmentRelease(&a);
  hostSegmentRelease(&created);
  EXPECT_FALSE(exists(name));
}

unsigned long long ownPidNamespace() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<unsigned long long>(st.st_ino) : 0;
}

TEST(HostShm, NameCarriesTheCreatorsPidAndPidNamespace) {
  const std::string name = freshName();
  SegmentCreator c;
  ASSERT_TRUE(parseSegmentName(name.substr(1), &c)) << name;
  EXPECT_EQ(c.pid, static_cast<long>(getpid()));
  EXPECT_EQ(c.pid_ns, ownPidNamespace());
  EXPECT_LT(name.size(), sizeof(RankInfo{}.host_shm));
  const std::string hex(32, 'a');
  const std::vector<std::string> others = {
      "tpcomm-" + hex,  // the names of earlier versions: their creator is not known
      "tpcomm-0-1-" + hex,
      "tpcomm-12-1-" + hex + "0",
      "tpcomm-12-1-" + hex.substr(1),
      "tpcomm-012-1-" + hex,
      "tpcomm--1-" + hex,
      "tpcomm-12-1-" + std::string(32, 'A'),
      "tpcomm-99999999999-1-" + hex,
      "xtpcomm-12-1-" + hex,
      "filler"};
  for (const std::string& other : others) EXPECT_FALSE(parseSegmentName(other, &c)) << other;
  EXPECT_TRUE(parseSegmentName("tpcomm-12-4026531836-" + hex, &c));
  EXPECT_EQ(c.pid, 12);
  EXPECT_EQ(c.pid_ns, 4026531836ull);
}

// A segment in /dev/shm as raw bytes under `name` (no header: reclaiming never reads it).
void plantSegment(const std::string& name) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0) << name << ": " << strerror(errno);
  EXPECT_EQ(ftruncate(fd, 4096), 0);
  close(fd);
}

// A rank 0 killed between creating the segment and the last rank's attach leaves it in /dev/shm:
// the next Begin's reclaim removes it, and only what is certainly such a leftover.
TEST(HostShm, SegmentOfADeadCreatorIsReclaimed) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {  // rank 0, created its segment, then killed: no destructor runs
    close(fds[0]);
    std::string name;
    HostSegment seg;
    const bool ok = hostSegmentName(&name) == tpcommSuccess &&
                    hostSegmentCreate(name, 2, kSmallSlot, &seg) == tpcommSuccess;
    const std::string out = ok ? name : std::string();
    _exit(write(fds[1], out.data(), out.size()) == ssize_t(out.size()) ? 0 : 1);
  }
  close(fds[1]);
  char buf[128];
  const ssize_t n = read(fds[0], buf, sizeof(buf));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_GT(n, 0) << "the child could not create a segment";
  const std::string dead(buf, static_cast<size_t>(n));
  ASSERT_TRUE(exists(dead));
  SegmentCreator c;
  ASSERT_TRUE(parseSegmentName(dead.substr(1), &c));
  ASSERT_EQ(c.pid, static_cast<long>(pid));

  // What must stay: a live creator's segment (ours), the same dead pid in another pid namespace
  // (a container sharing /dev/shm), a name of another pattern, and (as root) another user's.
  HostSegment live;
  const std::string live_name = freshName();
  ASSERT_EQ(hostSegmentCreate(live_name, 2, kSmallSlot, &live), tpcommSuccess);
  const std::string hex = dead.substr(dead.size() - 32);
  const std::string other_ns =
      "/tpcomm-" + std::to_string(pid) + "-" + std::to_string(c.pid_ns + 1) + "-" + hex;
  const std::string old_pattern = "/tpcomm-" + hex;
  plantSegment(other_ns);
  plantSegment(old_pattern);
  std::string foreign;
  if (geteuid() == 0) {
    foreign = "/tpcomm-" + std::to_string(pid) + "-" + std::to_string(c.pid_ns) + "-" +
              std::string(32, 'b');
    plantSegment(foreign);
    EXPECT_EQ(chown(("/dev/shm" + foreign).c_str(), 65534, 65534), 0) << strerror(errno);
  }

  // Not counted: another test process running at the same time may reclaim it first.
  hostSegmentReclaimStale();
  EXPECT_FALSE(exists(dead)) << dead << " of dead pid " << pid << " is still in /dev/shm";
  EXPECT_TRUE(exists(live_name));
  EXPECT_TRUE(exists(other_ns));
  EXPECT_TRUE(exists(old_pattern));
  if (!foreign.empty()) {
    EXPECT_TRUE(exists(foreign)) << "another user's segment was removed";
  }

  hostSegmentRelease(&live);
  EXPECT_FALSE(exists(live_name));
  for (const std::string& name : {other_ns, old_pattern, foreign}) {
    if (!name.empty()) {
      EXPECT_EQ(shm_unlink(name.c_str()), 0) << name;
    }
  }
}

TEST(HostTransport, OnlyHostFabricsOrHostAlgorithmsUseIt) {
  for (Fabric f : {Fabric::kNvlink, Fabric::kPcie}) {
    EXPECT_FALSE(hostTransportWanted(f, 2, -1));
    EXPECT_FALSE(hostTransportWanted(f, 8, tpcommAlgoOneShot));
    EXPECT_FALSE(hostTransportWanted(f, 4, tpcommAlgoNccl));
    EXPECT_TRUE(hostTransportWanted(f, 2, tpcommAlgoHostOneShot));  // forced
  }
  EXPECT_TRUE(hostTransportWanted(Fabric::kHost, 2, -1));
  EXPECT_FALSE(hostTransportWanted(Fabric::kHost, 1, -1));
}

// setupHostTransport as End runs it, on rank 0 of a 2-rank communicator.
class HostTransportSetup : public ::testing::Test {
 protected:
  void SetUp() override {
    name_ = freshName();
    all_.resize(2);
    snprintf(all_[0].host_shm, sizeof(all_[0].host_shm), "%s", name_.c_str());
    c_.world = 2;
    c_.rank = 0;
    c_.settings.host_slot_bytes = kSmallSlot;
  }
  void TearDown() override {
    hostSegmentRelease(&c_.host_seg);  // what destroyComm does
    EXPECT_FALSE(exists(name_)) << name_ << " left in /dev/shm";
  }
  std::string name_;
  std::vector<RankInfo> all_;
  tpcommComm c_;
};

TEST_F(HostTransportSetup, P2pCommunicatorCreatesNoSegment) {
  for (Fabric f : {Fabric::kNvlink, Fabric::kPcie}) {
    c_.fabric = f;
    ASSERT_EQ(setupHostTransport(&c_, all_.data()), tpcommSuccess) << lastError();
    EXPECT_FALSE(exists(name_));
    EXPECT_EQ(c_.host_seg.dev, nullptr);
  }
}

TEST_F(HostTransportSetup, FailedAttachLeavesNoSegment) {
  c_.fabric = Fabric::kHost;
  const tpcommResult_t r = setupHostTransport(&c_, all_.data());
  // Without a GPU, registering the segment with CUDA fails; with one, rank 0 attaches and its
  // peer never comes. Either way TearDown's release must remove the name.
  if (r != tpcommSuccess) {
    EXPECT_NE(std::string(lastError()).find("cudaHostRegister"), std::string::npos) << lastError();
  }
  EXPECT_TRUE(exists(name_));  // until the communicator is destroyed
}

}  // namespace
}  // namespace tpcomm
