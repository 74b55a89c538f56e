#include "inspect/elf_reader.h"

#include <cstdio>
#include <cstring>

#include "inspect/bytes.h"

namespace tpcomm::inspect {

namespace {

// Offsets in the 64-byte ELF64 header and the 64-byte section header (System V gABI, "ELF-64
// Object File Format"); only the fields the inspector uses.
constexpr uint64_t kEhdrSize = 64;
constexpr uint64_t kShdrSize = 64;
constexpr size_t kEiClass = 4, kEiData = 5;
constexpr uint8_t kClass64 = 2, kDataLittle = 1;
constexpr size_t kEType = 16, kEMachine = 18, kEShoff = 40, kEFlags = 48, kEShentsize = 58,
                 kEShnum = 60, kEShstrndx = 62;
constexpr size_t kShName = 0, kShType = 4, kShOffset = 24, kShSize = 32, kShLink = 40;
constexpr uint32_t kShtNobits = 8;
constexpr uint16_t kShnXindex = 0xffff;  // e_shstrndx escape: the real index is in sh_link of [0]
// A sanity bound: real files have at most tens of thousands of sections; a corrupt count must
// not make us allocate gigabytes.
constexpr uint64_t kMaxSections = 1u << 20;

std::string hex(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

bool parseElf(const ByteReader& read, uint64_t total_size, ElfImage* out, std::string* error) {
  *out = ElfImage();
  std::string ehdr;
  if (total_size < 4 || !read(0, 4, &ehdr) ||
      memcmp(ehdr.data(),
             "\x7f"
             "ELF",
             4) != 0) {
    *error = "not an ELF file (no \\x7fELF magic)";
    return false;
  }
  if (total_size < kEhdrSize || !read(0, kEhdrSize, &ehdr)) {
    *error = "truncated ELF header (" + std::to_string(total_size) + " bytes)";
    return false;
  }
  const auto* h = reinterpret_cast<const uint8_t*>(ehdr.data());
  if (h[kEiClass] != kClass64 || h[kEiData] != kDataLittle) {
    *error = "not a 64-bit little-endian ELF file (class " + std::to_string(h[kEiClass]) +
             ", data " + std::to_string(h[kEiData]) + ")";
    return false;
  }
  out->type = load16(h + kEType);
  out->machine = load16(h + kEMachine);
  out->flags = load32(h + kEFlags);
  const uint64_t shoff = load64(h + kEShoff);
  uint64_t shnum = load16(h + kEShnum);
  uint32_t shstrndx = load16(h + kEShstrndx);
  if (shoff == 0) return true;  // no section table (possible for stripped executables)
  if (load16(h + kEShentsize) != kShdrSize) {
    *error = "unexpected section header size " + std::to_string(load16(h + kEShentsize));
    return false;
  }

  // Section [0] carries the real count and string-table index when they do not fit the header.
  std::string sh0;
  if (!read(shoff, kShdrSize, &sh0)) {
    *error = "truncated: section table at " + hex(shoff) + " is past the end of the file (" +
             std::to_string(total_size) + " bytes)";
    return false;
  }
  const auto* s0 = reinterpret_cast<const uint8_t*>(sh0.data());
  if (shnum == 0) shnum = load64(s0 + kShSize);
  if (shstrndx == kShnXindex) shstrndx = load32(s0 + kShLink);
  if (shnum > kMaxSections) {
    *error = "implausible section count " + std::to_string(shnum);
    return false;
  }
  std::string table;
  if (!read(shoff, shnum * kShdrSize, &table)) {
    *error = "truncated: section table (" + std::to_string(shnum) + " sections at " + hex(shoff) +
             ") runs past the end of the file (" + std::to_string(total_size) + " bytes)";
    return false;
  }
  const auto* t = reinterpret_cast<const uint8_t*>(table.data());
  out->sections.resize(shnum);
  std::vector<uint32_t> name_offsets(shnum);
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint8_t* sh = t + i * kShdrSize;
    name_offsets[i] = load32(sh + kShName);
    out->sections[i].type = load32(sh + kShType);
    out->sections[i].offset = load64(sh + kShOffset);
    out->sections[i].size = load64(sh + kShSize);
  }
  if (shstrndx == 0 || shstrndx >= shnum) return true;  // no section names: nothing to find
  const ElfSection& strtab = out->sections[shstrndx];
  std::string names;
  if (strtab.type == kShtNobits || !read(strtab.offset, strtab.size, &names)) {
    *error =
        "truncated: section name table at " + hex(strtab.offset) + " is past the end of the file";
    return false;
  }
  for (uint64_t i = 0; i < shnum; ++i) {
    if (name_offsets[i] >= names.size()) continue;
    out->sections[i].name = names.c_str() + name_offsets[i];
  }
  return true;
}

bool parseElfInMemory(const uint8_t* data, size_t size, ElfImage* out, std::string* error) {
  ByteReader read = [data, size](uint64_t offset, uint64_t len, std::string* bytes) {
    if (offset > size || len > size - offset) return false;
    bytes->assign(reinterpret_cast<const char*>(data) + offset, len);
    return true;
  };
  return parseElf(read, size, out, error);
}

const char* elfTypeName(uint16_t type) {
  switch (type) {
    case kElfRelocatable:
      return "object file";
    case kElfExecutable:
      return "executable";
    case kElfShared:
      return "shared object";
    default:
      return "ELF file";
  }
}

}  // namespace tpcomm::inspect
