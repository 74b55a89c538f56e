// RendezvousHold (bootstrap.h): after a rendezvous, rank 0's name stays bound and every
// connection gets one Reason frame and is closed. A second job's ranks thus fail at once and
// clearly, where an unanswered socket would leave them waiting for their whole deadline.
// The name must go when the hold does: a child forked meanwhile gets no copy of the listening
// socket to keep it bound (close-on-exec for one that execs, a fork handler for one that
// does not), or reusing the id fails "already in use" for as long as the child lives.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "comm/rendezvous/bootstrap.h"
#include "comm/rendezvous/bootstrap_wire.h"
#include "comm/rendezvous/refusal_log.h"
#include "common/error.h"

namespace tpcomm {
namespace {

// The listening sockets of this process's live holds. The fork handler's prepare step takes the
// lock, so the child sees a consistent list, closes every socket on it and empties it.
std::mutex g_held_mu;
std::vector<int>& heldSockets() {
  static auto* v = new std::vector<int>();  // never destroyed: a fork may come at exit
  return *v;
}

void beforeFork() {
  g_held_mu.lock();
}
void afterForkInParent() {
  g_held_mu.unlock();
}
void afterForkInChild() {
  for (int fd : heldSockets()) close(fd);
  heldSockets().clear();
  g_held_mu.unlock();
}

void holdSocket(int fd) {
  static std::once_flag installed;
  std::call_once(installed,
                 [] { pthread_atfork(beforeFork, afterForkInParent, afterForkInChild); });
  std::lock_guard<std::mutex> lock(g_held_mu);
  heldSockets().push_back(fd);
}

// Takes fd off the list and closes it, under the lock: no fork comes between.
void closeHeldSocket(int fd) {
  std::lock_guard<std::mutex> lock(g_held_mu);
  auto& held = heldSockets();
  held.erase(std::remove(held.begin(), held.end(), fd), held.end());
  close(fd);
}

}  // namespace

bool RendezvousHold::holdsName(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_held_mu);
  for (int fd : heldSockets()) {
    sockaddr_un addr{};
    socklen_t len = sizeof(addr);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) continue;
    const size_t path = offsetof(sockaddr_un, sun_path);
    // Abstract: sun_path[0] is NUL and the name is the len - path - 1 bytes after it.
    if (len > path && addr.sun_path[0] == '\0' &&
        std::string(addr.sun_path + 1, len - path - 1) == name)
      return true;
  }
  return false;
}

tpcommResult_t RendezvousHold::start(int listen_fd, std::unique_ptr<RendezvousHold>* out) {
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    close(listen_fd);
    return fail(tpcommSystemError, "bootstrap: eventfd: %s", strerror(errno));
  }
  const int flags = fcntl(listen_fd, F_GETFD);
  if (flags < 0 || fcntl(listen_fd, F_SETFD, flags | FD_CLOEXEC) != 0) {
    const int err = errno;
    close(listen_fd);
    close(wake);
    return fail(tpcommSystemError, "bootstrap: close-on-exec for the held name: %s", strerror(err));
  }
  holdSocket(listen_fd);
  out->reset(new RendezvousHold(listen_fd, wake));
  // Returns once the thread has started and waits in poll(): a process that forks right after
  // init (a worker pool, a test) must not copy a thread in the middle of its start, whose locks
  // (the allocator's, under a sanitizer's allocator that has no fork handlers) the child would
  // inherit taken and never see released.
  std::unique_lock<std::mutex> lock((*out)->ready_mu_);
  (*out)->ready_cv_.wait(lock, [&] { return (*out)->ready_; });
  return tpcommSuccess;
}

RendezvousHold::RendezvousHold(int listen_fd, int wake_fd)
    : listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      owner_pid_(static_cast<int>(getpid())),
      thread_([this] { serve(); }) {}

RendezvousHold::~RendezvousHold() {
  if (static_cast<int>(getpid()) != owner_pid_) {
    // A forked child (e.g. a finalizer at its exit): the thread is the parent's, and the eventfd
    // is shared with it. Close only our copies; leak the handle of a thread this process lacks.
    // The fork handler closed the listening socket already: its number may be another file's
    // by now (even a hold of this child's own), so it is not closed again.
    new std::thread(std::move(thread_));
    close(wake_fd_);
    return;
  }
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) != static_cast<ssize_t>(sizeof(one))) {
    // An eventfd write fails only on counter overflow; the thread is awake then anyway.
  }
  thread_.join();
  closeHeldSocket(listen_fd_);  // unbinds the name
  close(wake_fd_);
}

void RendezvousHold::serve() {
  RefusalLog refusals("rank 0 (rendezvous complete)");
  const std::string complete = reasonFrame(
      tpcommInvalidUsage,
      "the rendezvous of this unique id is complete and its communicator is alive: a unique id "
      "serves one communicator (was it reused by a second job?); make a new one with "
      "tpcommGetUniqueId");
  {  // started, and allocates nothing more until a connection comes
    std::lock_guard<std::mutex> lock(ready_mu_);
    ready_ = true;
  }
  ready_cv_.notify_one();
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents) return;
    Fd c;
    int pid = 0;
    if (acceptOurs(listen_fd_, &refusals, &c.fd, &pid) != Accepted::kOurs) continue;
    refusals.note("pid %d came after the rendezvous completed (told it so)", pid);
    sendNow(c.fd, complete);
  }
}

}  // namespace tpcomm
