#include "common/trusted_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/unique_fd.h"

namespace tpcomm {
namespace {

const char kRule[] = " (tpcomm acts only on files that no user but you or root can change)";

// Why `what` (a file or folder with this stat) is not trusted; "" when it is.
std::string distrust(const struct stat& st, const std::string& what) {
  const uid_t me = geteuid();
  if (st.st_uid != me && st.st_uid != 0)
    return what + " is owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " +
           std::to_string(me) + ") or root";
  // In a sticky folder (/tmp) others may add entries but not replace or remove ours.
  if (S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX)) return "";
  char mode[16];
  snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if (st.st_mode & S_IWOTH) return what + " is writable by others (mode " + mode + ")";
  if (st.st_mode & S_IWGRP) return what + " is writable by its group (mode " + mode + ")";
  return "";
}

// Opens the folder `real` (a canonical path) one component at a time from "/", refusing a link
// (the path was canonical: a link now means it changed under us) and any folder that fails the
// rule. -1 with *why (and *missing when a component does not exist).
int openTrustedFolder(const std::string& real, std::string* why, bool* missing) {
  *missing = false;
  UniqueFd fd(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  std::string sofar = "/";
  size_t pos = 1;
  while (true) {
    struct stat st;
    if (fd.get() < 0 || fstat(fd.get(), &st) != 0) {
      const int e = errno;
      *missing = e == ENOENT;
      *why = (e == ENOTDIR || e == ELOOP)
                 ? "folder " + sofar + " changed while it was read (now a link or not a folder)"
                 : "cannot open folder " + sofar + ": " + strerror(e);
      return -1;
    }
    const std::string bad = distrust(st, "folder " + sofar);
    if (!bad.empty()) {
      *why = bad + kRule;
      return -1;
    }
    while (pos < real.size() && real[pos] == '/') ++pos;
    if (pos >= real.size()) return fd.release();
    const size_t end = std::min(real.find('/', pos), real.size());
    sofar = real.substr(0, end);
    fd.reset(openat(fd.get(), real.substr(pos, end - pos).c_str(),
                    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    pos = end;
  }
}

// realpath() of `folder`, then openTrustedFolder.
int openFolder(const std::string& folder, std::string* why, bool* missing) {
  char* real = realpath(folder.c_str(), nullptr);
  if (!real) {
    *missing = errno == ENOENT || errno == ENOTDIR;
    *why = "cannot resolve folder " + folder + ": " + strerror(errno);
    return -1;
  }
  const std::string canonical = real;
  free(real);
  return openTrustedFolder(canonical, why, missing);
}

}  // namespace

bool trustedFolder(const std::string& folder, std::string* why) {
  bool missing = false;
  UniqueFd fd(openFolder(folder, why, &missing));
  return fd.get() >= 0;
}

TrustedRead readTrustedFile(const std::string& path, std::string* text, std::string* why,
                            size_t max_bytes) {
  text->clear();
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "."
                             : slash == 0               ? "/"
                                                        : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") {
    *why = "'" + path + "' is not a file name";
    return TrustedRead::kFailed;
  }
  bool missing = false;
  UniqueFd dir(openFolder(folder, why, &missing));
  if (dir.get() < 0) return missing ? TrustedRead::kMissing : TrustedRead::kUntrusted;
  // O_NONBLOCK: a FIFO planted in the file's place must not hang the caller in open().
  UniqueFd fd(
      openat(dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int e = errno;
    if (e == ENOENT) {
      *why = "cannot open " + path + ": " + strerror(e);
      return TrustedRead::kMissing;
    }
    if (e == ELOOP) {
      *why = path + " is a symbolic link" + kRule + "; name the file itself";
      return TrustedRead::kUntrusted;
    }
    *why = "cannot open " + path + ": " + strerror(e);
    return TrustedRead::kFailed;
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    *why = "cannot stat " + path + ": " + strerror(errno);
    return TrustedRead::kFailed;
  }
  if (!S_ISREG(st.st_mode)) {
    *why = path + " is not a regular file";
    return TrustedRead::kUntrusted;
  }
  const std::string bad = distrust(st, path);
  if (!bad.empty()) {
    *why = bad + kRule;
    return TrustedRead::kUntrusted;
  }
  const std::string too_large = path + " is larger than " + std::to_string(max_bytes) + " bytes";
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    *why = too_large;
    return TrustedRead::kFailed;
  }
  char buf[65536];
  while (true) {
    const ssize_t n = read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *why = "cannot read " + path + ": " + strerror(errno);
      return TrustedRead::kFailed;
    }
    if (n == 0) return TrustedRead::kRead;
    if (text->size() + static_cast<size_t>(n) > max_bytes) {  // grew while being read
      *why = too_large;
      text->clear();
      return TrustedRead::kFailed;
    }
    text->append(buf, static_cast<size_t>(n));
  }
}

}  // namespace tpcomm
