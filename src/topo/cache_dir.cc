#include "topo/cache_dir.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "common/trusted_file.h"

namespace tpcomm {
namespace topo {

std::string userCacheDir() {
  // XDG_CACHE_HOME and HOME are the desktop conventions for where caches go, not tpcomm
  // settings, so they are read here rather than in common/env.cc (TPCOMM_* only).
  const char* xdg = getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/tpcomm";
  const char* home = getenv("HOME");
  if (home && home[0] == '/') return std::string(home) + "/.cache/tpcomm";
  struct passwd pw;
  struct passwd* found = nullptr;
  char buf[4096];
  if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &found) == 0 && found && pw.pw_dir &&
      pw.pw_dir[0] == '/')
    return std::string(pw.pw_dir) + "/.cache/tpcomm";
  return "";
}

tpcommResult_t makeDirs(const std::string& path) {
  if (path.empty()) return fail(tpcommInvalidArgument, "makeDirs: empty path");
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    const std::string part = path.substr(0, pos);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
      return fail(tpcommSystemError, "cannot create folder %s: %s", part.c_str(), strerror(errno));
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return fail(tpcommSystemError, "%s exists but is not a folder", path.c_str());
  return tpcommSuccess;
}

bool readTextFile(const std::string& path, std::string* text, std::string* why, size_t max_bytes,
                  bool* missing) {
  if (missing) *missing = false;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (missing) *missing = errno == ENOENT;
    *why = "cannot open " + path + ": " + strerror(errno);
    return false;
  }
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!ok) *why = path + " is not a regular file";
  if (ok && static_cast<size_t>(st.st_size) > max_bytes) {
    ok = false;
    *why = path + " is larger than " + std::to_string(max_bytes) + " bytes";
  }
  text->clear();
  char buf[65536];
  while (ok) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ok = false;
      *why = "cannot read " + path + ": " + strerror(errno);
    } else if (n == 0) {
      break;
    } else if (text->size() + n > max_bytes) {
      ok = false;
      *why = path + " is larger than " + std::to_string(max_bytes) + " bytes";
    } else {
      text->append(buf, n);
    }
  }
  close(fd);
  return ok;
}

tpcommResult_t writeTextFileAtomic(const std::string& path, const std::string& text,
                                   unsigned mode) {
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "."
                             : slash == 0               ? "/"
                                                        : path.substr(0, slash);
  if (slash != std::string::npos && slash > 0) TPCOMM_CHECK(makeDirs(folder));
  std::string why;
  if (!trustedFolder(folder, &why))
    return fail(tpcommSystemError, "not writing %s: %s", path.c_str(), why.c_str());
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = mkostemp(&tmp[0], O_CLOEXEC);
  if (fd < 0)
    return fail(tpcommSystemError, "cannot create a temporary file for %s: %s", path.c_str(),
                strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const int saved = errno;
  const bool ok =
      done == text.size() && fchmod(fd, static_cast<mode_t>(mode)) == 0 && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = ok ? errno : saved;
    unlink(tmp.c_str());
    return fail(tpcommSystemError, "cannot write %s: %s", path.c_str(), strerror(err));
  }
  return tpcommSuccess;
}

}  // namespace topo
}  // namespace tpcomm
