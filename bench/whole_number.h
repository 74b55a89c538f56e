// The benches' numeric options: a whole decimal number in a range, or a refusal. atoi would take
// "2x" as 2 and "x" as 0, and strtoull would stop at the first bad character without saying so.
#pragma once

#include <cerrno>
#include <cstdlib>

namespace tpcomm::bench {

// "12" in [lo, hi]: true and *out. "", "12x", "-3", "1e3", " 1" and overflow: false.
inline bool parseWhole(const char* s, unsigned long long lo, unsigned long long hi,
                       unsigned long long* out) {
  if (s == nullptr || *s < '0' || *s > '9') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// The same into an int, for the options that are ints.
inline bool parseWholeInt(const char* s, int lo, int hi, int* out) {
  unsigned long long v = 0;
  if (lo < 0 ||
      !parseWhole(s, static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi), &v))
    return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace tpcomm::bench
