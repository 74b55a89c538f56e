#include "comm/bootstrap.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/unique_id.h"
#include "common/error.h"
#include "common/log.h"

namespace tpcomm {
namespace {

constexpr uint32_t kHelloMagic = 0x7c0b0075u;

struct Hello {
  uint32_t magic;
  int32_t rank;
  int32_t nranks;
  uint32_t pad;
  uint64_t len;
};

using Clock = std::chrono::steady_clock;

int msLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

// Closes the descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  Fd(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

sockaddr_un socketAddress(const std::string& name, socklen_t* len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // Abstract namespace: sun_path[0] == '\0'; nothing is created in the file system.
  memcpy(addr.sun_path + 1, name.data(), name.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return addr;
}

tpcommResult_t waitFd(int fd, short events, Clock::time_point deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, msLeft(deadline));
    if (r > 0) return tpcommSuccess;
    if (r == 0) return fail(tpcommTimeout, "bootstrap: timed out %s", what);
    if (errno != EINTR) return fail(tpcommSystemError, "bootstrap: poll: %s", strerror(errno));
  }
}

tpcommResult_t sendAll(int fd, const void* buf, size_t n, Clock::time_point deadline) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    TPCOMM_CHECK(waitFd(fd, POLLOUT, deadline, "sending to a peer"));
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail(tpcommRemoteError, "bootstrap: send: %s (did a peer exit?)", strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return tpcommSuccess;
}

tpcommResult_t recvAll(int fd, void* buf, size_t n, Clock::time_point deadline, const char* what) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    TPCOMM_CHECK(waitFd(fd, POLLIN, deadline, what));
    const ssize_t r = recv(fd, p, n, 0);
    if (r == 0) return fail(tpcommRemoteError, "bootstrap: peer closed the connection %s", what);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail(tpcommRemoteError, "bootstrap: recv: %s", strerror(errno));
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return tpcommSuccess;
}

tpcommResult_t rootGather(const std::string& name, int nranks, const void* mine, size_t len,
                          void* all, Clock::time_point deadline) {
  Fd srv(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (srv.fd < 0) return fail(tpcommSystemError, "bootstrap: socket: %s", strerror(errno));
  socklen_t alen = 0;
  sockaddr_un addr = socketAddress(name, &alen);
  if (bind(srv.fd, reinterpret_cast<sockaddr*>(&addr), alen) != 0)
    return fail(tpcommSystemError,
                "bootstrap: bind @%s: %s (is another rank 0 using the same unique id?)",
                name.c_str(), strerror(errno));
  if (listen(srv.fd, nranks) != 0)
    return fail(tpcommSystemError, "bootstrap: listen: %s", strerror(errno));

  memcpy(all, mine, len);
  std::vector<Fd> peers(static_cast<size_t>(nranks));
  int joined = 1;
  while (joined < nranks) {
    if (waitFd(srv.fd, POLLIN, deadline, "waiting for ranks to connect") != tpcommSuccess) {
      std::string missing;
      for (int r = 1; r < nranks; ++r)
        if (peers[static_cast<size_t>(r)].fd < 0) missing += " " + std::to_string(r);
      return fail(tpcommTimeout, "bootstrap: rank 0 waited for ranks that never connected:%s",
                  missing.c_str());
    }
    Fd c(accept4(srv.fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (c.fd < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail(tpcommSystemError, "bootstrap: accept: %s", strerror(errno));
    }
    ucred cred{};
    socklen_t clen = sizeof(cred);
    if (getsockopt(c.fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 || cred.uid != getuid()) {
      TPCOMM_WARN(INIT, "bootstrap: refused a connection from uid %u (pid %d): not our user",
                  static_cast<unsigned>(cred.uid), static_cast<int>(cred.pid));
      continue;
    }
    Hello h{};
    TPCOMM_CHECK(recvAll(c.fd, &h, sizeof(h), deadline, "reading a peer's hello"));
    if (h.magic != kHelloMagic || h.len != len)
      return fail(tpcommRemoteError, "bootstrap: a peer (pid %d) speaks another protocol version",
                  static_cast<int>(cred.pid));
    if (h.nranks != nranks)
      return fail(tpcommInvalidArgument,
                  "bootstrap: rank %d was initialised with nranks=%d, rank 0 with nranks=%d",
                  h.rank, h.nranks, nranks);
    if (h.rank <= 0 || h.rank >= nranks || peers[static_cast<size_t>(h.rank)].fd >= 0)
      return fail(tpcommInvalidArgument, "bootstrap: rank %d joined twice or is out of range",
                  h.rank);
    TPCOMM_CHECK(recvAll(c.fd, static_cast<char*>(all) + static_cast<size_t>(h.rank) * len, len,
                         deadline, "reading a peer's handle"));
    peers[static_cast<size_t>(h.rank)] = std::move(c);
    ++joined;
  }
  for (int r = 1; r < nranks; ++r)
    TPCOMM_CHECK(sendAll(peers[static_cast<size_t>(r)].fd, all, len * static_cast<size_t>(nranks),
                         deadline));
  return tpcommSuccess;
}

tpcommResult_t peerGather(const std::string& name, int rank, int nranks, const void* mine,
                          size_t len, void* all, Clock::time_point deadline) {
  socklen_t alen = 0;
  sockaddr_un addr = socketAddress(name, &alen);
  Fd c;
  for (;;) {
    c = Fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (c.fd < 0) return fail(tpcommSystemError, "bootstrap: socket: %s", strerror(errno));
    if (connect(c.fd, reinterpret_cast<sockaddr*>(&addr), alen) == 0) break;
    if (errno != ECONNREFUSED && errno != ENOENT && errno != EAGAIN && errno != EINTR)
      return fail(tpcommSystemError, "bootstrap: connect: %s", strerror(errno));
    if (msLeft(deadline) == 0)
      return fail(tpcommTimeout,
                  "bootstrap: rank %d could not reach rank 0 (is it running, with "
                  "the same unique id, on this machine?)",
                  rank);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ucred cred{};
  socklen_t clen = sizeof(cred);
  if (getsockopt(c.fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 || cred.uid != getuid())
    return fail(tpcommRemoteError, "bootstrap: the rendezvous socket belongs to uid %u, not us",
                static_cast<unsigned>(cred.uid));
  Hello h{kHelloMagic, rank, nranks, 0, len};
  TPCOMM_CHECK(sendAll(c.fd, &h, sizeof(h), deadline));
  TPCOMM_CHECK(sendAll(c.fd, mine, len, deadline));
  return recvAll(c.fd, all, len * static_cast<size_t>(nranks), deadline,
                 "waiting for rank 0 to send every rank's handle");
}

}  // namespace

tpcommResult_t bootstrapAllGather(const tpcommUniqueId& id, int rank, int nranks, const void* mine,
                                  size_t len, void* all, int timeout_ms) {
  UniqueIdData d{};
  TPCOMM_CHECK(parseUniqueId(id, &d));
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  const std::string name = rendezvousName(d);
  TPCOMM_DEBUG(INIT, "bootstrap: rank %d/%d meets at @%s", rank, nranks, name.c_str());
  if (rank == 0) return rootGather(name, nranks, mine, len, all, deadline);
  return peerGather(name, rank, nranks, mine, len, all, deadline);
}

}  // namespace tpcomm
