// Reading a file that decides what tpcomm does (the tuning table, the P2P cache) only when no other
// user could have written or swapped it: the file is opened without following a link, checked on
// the opened descriptor (a regular file, owned by this effective user or root, writable by nobody
// else, at most max_bytes), and every folder on its real path is owned by this user or root and
// writable by nobody else, unless sticky (like /tmp, where others cannot replace our entries).
#pragma once

#include <cstddef>
#include <string>

namespace tpcomm {

// The tuning table and the P2P cache are a few KiB; a larger file is refused before it is parsed.
constexpr size_t kMaxTrustedFileBytes = 1u << 20;

enum class TrustedRead {
  kRead,       // *text holds the whole file
  kMissing,    // the file (or its folder) does not exist
  kUntrusted,  // refused: *why says which file or folder and why
  kFailed,     // unreadable or too large: *why says why
};

TrustedRead readTrustedFile(const std::string& path, std::string* text, std::string* why,
                            size_t max_bytes = kMaxTrustedFileBytes);

// True when `folder` and every folder above it pass the folder rule above; false with *why.
// Writers check the folder they write into: a file written there would not be trusted when read.
bool trustedFolder(const std::string& folder, std::string* why);

}  // namespace tpcomm
