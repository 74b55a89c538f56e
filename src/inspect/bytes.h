// Little-endian loads from byte buffers. ELF files for x86-64/aarch64 and CUDA fat binaries are
// little-endian whatever the host; assembling the bytes keeps the reader correct (and free of
// alignment traps) on any host.
#pragma once

#include <cstdint>

namespace tpcomm::inspect {

inline uint16_t load16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

inline uint32_t load32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

inline uint64_t load64(const uint8_t* p) {
  return static_cast<uint64_t>(load32(p)) | (static_cast<uint64_t>(load32(p + 4)) << 32);
}

}  // namespace tpcomm::inspect
