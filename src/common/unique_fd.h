// A file descriptor that closes itself: every early return of the code that opens files and
// shared memory (common/trusted_file.cc, transport/host_shm.cc) closes what it opened.
#pragma once

#include <unistd.h>

#include <cerrno>

namespace tpcomm {

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(-1); }
  int get() const { return fd_; }
  // Closes the old descriptor, keeping errno: callers read the errno of the call that made `fd`.
  void reset(int fd) {
    const int e = errno;
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
    errno = e;
  }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

}  // namespace tpcomm
