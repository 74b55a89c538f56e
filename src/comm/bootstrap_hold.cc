// RendezvousHold (bootstrap.h): after a rendezvous, rank 0's name stays bound and every
// connection gets one Reason frame and is closed. A second job's ranks thus fail at once and
// clearly, where an unanswered socket would leave them waiting for their whole deadline.
#include <poll.h>
#include <sys/eventfd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "comm/bootstrap.h"
#include "comm/bootstrap_wire.h"
#include "comm/refusal_log.h"
#include "common/error.h"

namespace tpcomm {

tpcommResult_t RendezvousHold::start(int listen_fd, std::unique_ptr<RendezvousHold>* out) {
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    close(listen_fd);
    return fail(tpcommSystemError, "bootstrap: eventfd: %s", strerror(errno));
  }
  out->reset(new RendezvousHold(listen_fd, wake));
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
    new std::thread(std::move(thread_));
    close(listen_fd_);
    close(wake_fd_);
    return;
  }
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) != static_cast<ssize_t>(sizeof(one))) {
    // An eventfd write fails only on counter overflow; the thread is awake then anyway.
  }
  thread_.join();
  close(listen_fd_);  // unbinds the name
  close(wake_fd_);
}

void RendezvousHold::serve() {
  RefusalLog refusals("rank 0 (rendezvous complete)");
  const std::string complete = reasonFrame(
      tpcommInvalidUsage,
      "the rendezvous of this unique id is complete and its communicator is alive: a unique id "
      "serves one communicator (was it reused by a second job?); make a new one with "
      "tpcommGetUniqueId");
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
