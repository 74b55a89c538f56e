#include "comm/rendezvous/refusal_log.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <thread>

#include "common/log.h"

namespace tpcomm {

void RefusalLog::note(const char* fmt, ...) {
  if (shown_ >= kShownRefusals) {
    ++hidden_;
    return;
  }
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  ++shown_;
  TPCOMM_WARN(INIT, "bootstrap: %s refused a connection: %s%s", who_, what,
              shown_ == kShownRefusals ? " (further refusals are counted, not shown)" : "");
}

RefusalLog::~RefusalLog() {
  if (hidden_ > 0)
    TPCOMM_WARN(INIT, "bootstrap: %s refused %d more connections than shown (%d in all)", who_,
                hidden_, shown_ + hidden_);
}

Accepted acceptOurs(int listen_fd, RefusalLog* refusals, int* out, int* pid) {
  const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return Accepted::kNone;
  }
  ucred cred{};
  socklen_t n = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) != 0 || cred.uid != geteuid()) {
    refusals->note("uid %u (pid %d) is not our user", static_cast<unsigned>(cred.uid),
                   static_cast<int>(cred.pid));
    close(fd);
    return Accepted::kRefused;
  }
  *out = fd;
  *pid = static_cast<int>(cred.pid);
  return Accepted::kOurs;
}

}  // namespace tpcomm
