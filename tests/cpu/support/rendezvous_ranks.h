// Ranks of a rendezvous as forked processes (no CUDA is involved), each reporting its result code
// and tpcommGetLastError text through a pipe, plus raw connections for hostile peers.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/rendezvous/bootstrap.h"
#include "comm/rendezvous/unique_id.h"
#include "common/error.h"

namespace tpcomm {
namespace testing_rv {

constexpr size_t kLen = 40;

// A blob that says which job and rank made it.
inline std::vector<char> blob(int rank, int job = 0) {
  std::vector<char> b(kLen);
  for (size_t i = 0; i < kLen; ++i) b[i] = static_cast<char>(rank * 31 + job * 7 + i);
  return b;
}

// Runs the all-gather as `rank` and checks the table (every entry from `job`): 0 = success,
// 100 = a table with a foreign entry, else the result code.
inline int gatherAs(const tpcommUniqueId& id, int rank, int nranks, int timeout_ms, int job = 0,
                    std::unique_ptr<RendezvousHold>* hold = nullptr) {
  std::vector<char> all(kLen * nranks);
  const std::vector<char> mine = blob(rank, job);
  const tpcommResult_t r =
      bootstrapAllGather(id, rank, nranks, mine.data(), kLen, all.data(), timeout_ms, hold);
  if (r != tpcommSuccess) return static_cast<int>(r);
  for (int q = 0; q < nranks; ++q)
    if (memcmp(all.data() + q * kLen, blob(q, job).data(), kLen) != 0) return 100;
  return 0;
}

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end: the child's last error text
};

struct Outcome {
  int code = -1;  // exit code (0 success), -1 killed
  std::string error;
};

// Runs body() in a child; its return value is the exit code, lastError() comes back as text.
template <typename Body>
Child forkChild(Body body) {
  int p[2];
  if (pipe(p) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    const int code = body();
    const char* e = lastError();
    if (write(p[1], e, strlen(e)) < 0) _exit(98);
    _exit(code);
  }
  close(p[1]);
  return {pid, p[0]};
}

inline Child forkRank(const tpcommUniqueId& id, int rank, int nranks, int timeout_ms, int job = 0,
                      int delay_ms = 0) {
  return forkChild([=] {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    return gatherAs(id, rank, nranks, timeout_ms, job);
  });
}

inline Outcome finish(Child c) {
  Outcome o;
  char buf[1024];
  ssize_t n;
  while ((n = read(c.out, buf, sizeof(buf))) > 0) o.error.append(buf, static_cast<size_t>(n));
  close(c.out);
  int st = 0;
  waitpid(c.pid, &st, 0);
  o.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return o;
}

// Ends a hostile child that has done its part (it may be sleeping on an open connection).
inline Outcome stop(Child c) {
  kill(c.pid, SIGKILL);
  return finish(c);
}

inline double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline std::string nameOf(const tpcommUniqueId& id) {
  UniqueIdData d{};
  EXPECT_EQ(parseUniqueId(id, &d), tpcommSuccess);
  return rendezvousName(d);
}

// A raw connection to the socket named `name` (what any local process can do), retried until
// something listens there or timeout_ms passes; -1 then.
inline int rawConnect(const std::string& name, int timeout_ms) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path + 1, name.data(), name.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) return fd;
    close(fd);
    if (secondsSince(t0) * 1000 > timeout_ms) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Reads what arrives within timeout_ms (at most n bytes); the count read.
inline size_t rawRead(int fd, void* buf, size_t n, int timeout_ms) {
  size_t got = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (got < n) {
    const int left = timeout_ms - static_cast<int>(secondsSince(t0) * 1000);
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, left) <= 0) break;
    const ssize_t r = recv(fd, static_cast<char*>(buf) + got, n - got, 0);
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

inline void rawWrite(int fd, const void* buf, size_t n) {
  if (send(fd, buf, n, MSG_NOSIGNAL) < 0) {
    // The peer may have dropped us already: that is what the hostile tests expect.
  }
}

}  // namespace testing_rv
}  // namespace tpcomm
