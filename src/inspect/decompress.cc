#include "inspect/decompress.h"

#include <lz4.h>
#include <zstd.h>

#include <limits>

#include "inspect/fatbin.h"

namespace tpcomm::inspect {

Codec codecOf(uint64_t flags) {
  const uint64_t bits = flags & (kFlagCompressedOld | kFlagCompressedLz4 | kFlagCompressedZstd);
  if (bits == 0) return Codec::kNone;
  if (bits == kFlagCompressedLz4) return Codec::kLz4;
  if (bits == kFlagCompressedZstd) return Codec::kZstd;
  return Codec::kUnknown;
}

const char* codecName(Codec codec) {
  switch (codec) {
    case Codec::kNone:
      return "none";
    case Codec::kLz4:
      return "lz4";
    case Codec::kZstd:
      return "zstd";
    default:
      return "unknown";
  }
}

bool decompress(Codec codec, const uint8_t* data, size_t size, uint64_t expected, std::string* out,
                std::string* error) {
  const std::string want = std::to_string(expected);
  if (codec == Codec::kLz4) {
    // The LZ4 block API counts in int.
    constexpr uint64_t kIntMax = static_cast<uint64_t>(std::numeric_limits<int>::max());
    if (size > kIntMax || expected > kIntMax) {
      *error = "lz4: image of " + want + " bytes is larger than an LZ4 block can be";
      return false;
    }
    out->assign(expected, '\0');
    const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(data), &(*out)[0],
                                      static_cast<int>(size), static_cast<int>(expected));
    if (n < 0) {
      *error = "lz4: not a valid LZ4 block of at most " + want + " bytes";
      return false;
    }
    if (static_cast<uint64_t>(n) != expected) {
      *error = "lz4: " + std::to_string(n) + " of the " + want + " bytes the header gives";
      return false;
    }
    return true;
  }
  if (codec == Codec::kZstd) {
    out->assign(expected, '\0');
    const size_t n = ZSTD_decompress(&(*out)[0], expected, data, size);
    if (ZSTD_isError(n)) {
      *error = std::string("zstd: ") + ZSTD_getErrorName(n) + " (header gives " + want + " bytes)";
      return false;
    }
    if (n != expected) {
      *error = "zstd: " + std::to_string(n) + " of the " + want + " bytes the header gives";
      return false;
    }
    return true;
  }
  *error = std::string("no decompressor for codec ") + codecName(codec);
  return false;
}

}  // namespace tpcomm::inspect
