// Shared glue of the libFuzzer targets: the input as text or as a file, and a property check that
// crashes (so libFuzzer saves the input) with a message saying which property broke.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace tpcomm::fuzz {

inline std::string asText(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

inline void die(const std::string& what) {
  perror(("tpcomm fuzz: " + what).c_str());
  abort();
}

// Entry points that only read files get the input through one file in a private folder (mode
// 0700, the file 0600, owned by us), rewritten for every input: what a trusted cache file looks
// like, so a reader's owner and mode checks let it through to the parser. The folder is on tmpfs
// (/dev/shm) unless TMPDIR says otherwise, so that rewriting it for every input touches no disk.
inline const std::string& inputPath() {
  static const std::string path = [] {
    const char* tmp = getenv("TMPDIR");
    const std::string base = tmp && *tmp                     ? tmp
                             : access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                                                             : "/tmp";
    static std::string dir = base + "/tpcomm-fuzz-XXXXXX";
    if (!mkdtemp(&dir[0])) die("mkdtemp " + dir);
    atexit([] {
      unlink((dir + "/input").c_str());
      rmdir(dir.c_str());
    });
    return dir + "/input";
  }();
  return path;
}

inline const std::string& writeInputFile(const uint8_t* data, size_t size) {
  const std::string& path = inputPath();
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) die("open " + path);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) die("write " + path);
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) die("close " + path);
  return path;
}

// A broken property is a finding like a crash: abort with the reason.
inline void check(bool ok, const char* property, const std::string& detail = "") {
  if (ok) return;
  fprintf(stderr, "tpcomm fuzz: property broken: %s%s%s\n", property, detail.empty() ? "" : ": ",
          detail.c_str());
  abort();
}

// The topology key the tuning table and P2P cache seeds carry (corpus/); other keys take the
// rejection path.
constexpr const char* kSeedKey = "fuzz-key";

}  // namespace tpcomm::fuzz

// Each target is one file that includes this header once. The parsers log through tpcomm's logger:
// keep the output to findings unless the user set TPCOMM_LOG.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("TPCOMM_LOG", "none", /*overwrite=*/0);
  return 0;
}
