// Minimal reader for 64-bit little-endian ELF files: the header and the section table, and the
// bytes of chosen sections. Enough to find the CUDA fat binaries (.nv_fatbin, __nv_relfatbin) in
// a shared library, an executable or a relocatable object, and the sections of a cubin (itself an
// ELF file). No CUDA headers, no libelf: the inspector must run on machines without a toolkit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tpcomm::inspect {

// ELF e_type values the inspector names.
constexpr uint16_t kElfRelocatable = 1;  // ET_REL: an object file (.o)
constexpr uint16_t kElfExecutable = 2;   // ET_EXEC
constexpr uint16_t kElfShared = 3;       // ET_DYN: a shared library or a PIE executable

struct ElfSection {
  std::string name;
  uint32_t type = 0;    // sh_type; 8 (SHT_NOBITS) has no bytes in the file
  uint64_t offset = 0;  // sh_offset: where its bytes start in the file
  uint64_t size = 0;    // sh_size
};

struct ElfImage {
  uint16_t type = 0;     // e_type
  uint16_t machine = 0;  // e_machine (62 = x86-64, 190 = CUDA, 183 = aarch64)
  uint32_t flags = 0;    // e_flags
  std::vector<ElfSection> sections;
};

// Reads `size` bytes at `offset` of the underlying file or buffer into *out; false when the
// bytes are not all there (the caller then reports the image as truncated).
using ByteReader = std::function<bool(uint64_t offset, uint64_t size, std::string* out)>;

// Parses the ELF header and the section table through `read`, whose data is `total_size` bytes
// long. On failure returns false and sets *error to what is wrong ("not an ELF file", ...).
bool parseElf(const ByteReader& read, uint64_t total_size, ElfImage* out, std::string* error);

// Same, for an image held in memory (a cubin inside a fat binary).
bool parseElfInMemory(const uint8_t* data, size_t size, ElfImage* out, std::string* error);

// Human name of an e_type ("shared object", "object file", ...).
const char* elfTypeName(uint16_t type);

}  // namespace tpcomm::inspect
