#include "common/byte_size.h"

#include <cctype>
#include <cstdint>
#include <limits>

namespace tpcomm {
namespace {

static_assert(sizeof(size_t) == sizeof(uint64_t), "tpcomm targets 64-bit Linux");

// The shift of a K/M/G suffix (case-insensitive), 0 for none, -1 for anything else. The whole
// remainder must be the suffix: "K", "Ki", "KB" or "KiB" (and "B" alone).
int suffixShift(const char* s) {
  int shift = 0;
  switch (tolower(static_cast<unsigned char>(*s))) {
    case 'k':
      shift = 10;
      break;
    case 'm':
      shift = 20;
      break;
    case 'g':
      shift = 30;
      break;
    default:
      break;
  }
  if (shift) {
    ++s;
    if (tolower(static_cast<unsigned char>(*s)) == 'i') ++s;
  }
  if (tolower(static_cast<unsigned char>(*s)) == 'b') ++s;
  return *s == '\0' ? shift : -1;
}

}  // namespace

bool parseByteSize(const char* text, size_t* out, std::string* why) {
  const char* s = text;
  if (!isdigit(static_cast<unsigned char>(*s))) {
    *why = "expected a whole number of bytes, optionally with K, M or G (e.g. 65536, 64K, 16MiB)";
    return false;
  }
  // Digits by hand, not strtoull: strtoull accepts a sign and wraps "-1" to 2^64-1.
  uint64_t value = 0;
  for (; isdigit(static_cast<unsigned char>(*s)); ++s) {
    const uint64_t digit = static_cast<uint64_t>(*s - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
      *why = "too large (does not fit in 64 bits)";
      return false;
    }
    value = value * 10 + digit;
  }
  if (*s == '.') {
    *why = "expected a whole number, no fraction (1536K, not 1.5M)";
    return false;
  }
  const int shift = suffixShift(s);
  if (shift < 0) {
    *why = std::string("unknown suffix '") + s + "' (use K, M or G, optionally with B or iB)";
    return false;
  }
  if (shift > 0 && value > (std::numeric_limits<uint64_t>::max() >> shift)) {
    *why = "too large (does not fit in 64 bits)";
    return false;
  }
  *out = static_cast<size_t>(value << shift);
  return true;
}

}  // namespace tpcomm
