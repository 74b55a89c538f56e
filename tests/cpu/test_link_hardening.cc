// How libtpcomm.so and the `tpcomm` CLI are linked (cmake/PortableLink.cmake): full RELRO, i.e.
// a PT_GNU_RELRO segment (-z relro) and every symbol bound at load time (-z now: DT_FLAGS has
// DF_BIND_NOW or DT_FLAGS_1 has DF_1_NOW), so the loader can make the whole GOT read-only. Read
// with the inspector's own ELF reader (sections) and the program headers by hand: no readelf.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "inspect/elf_reader.h"

namespace tpcomm::inspect {
namespace {

constexpr uint32_t kShtDynamic = 6;
constexpr uint32_t kPtGnuRelro = 0x6474e552;
constexpr int64_t kDtNull = 0;
constexpr int64_t kDtFlags = 30;
constexpr int64_t kDtFlags1 = 0x6ffffffb;
constexpr uint64_t kDfBindNow = 0x8;
constexpr uint64_t kDf1Now = 0x1;

template <typename T>
T load(const std::string& bytes, uint64_t at) {
  T v{};
  if (at + sizeof(T) <= bytes.size()) memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

struct Linkage {
  std::string error;  // why the file could not be read ("" when it was)
  bool relro = false;
  bool bind_now = false;
};

Linkage linkageOf(const std::string& path) {
  Linkage l;
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ElfImage elf;
  if (!parseElfInMemory(reinterpret_cast<const uint8_t*>(file.data()), file.size(), &elf, &l.error))
    return l;
  // Program headers: e_phoff at 32, e_phentsize at 54, e_phnum at 56; p_type first in each.
  const uint64_t phoff = load<uint64_t>(file, 32);
  const uint16_t phentsize = load<uint16_t>(file, 54), phnum = load<uint16_t>(file, 56);
  for (uint16_t i = 0; i < phnum; ++i)
    l.relro |= load<uint32_t>(file, phoff + uint64_t{i} * phentsize) == kPtGnuRelro;
  int dynamic_sections = 0;
  for (const ElfSection& s : elf.sections) {
    if (s.type != kShtDynamic) continue;
    ++dynamic_sections;
    for (uint64_t at = s.offset; at + 16 <= s.offset + s.size && at + 16 <= file.size(); at += 16) {
      const int64_t tag = load<int64_t>(file, at);
      const uint64_t val = load<uint64_t>(file, at + 8);
      if (tag == kDtNull) break;
      if (tag == kDtFlags && (val & kDfBindNow)) l.bind_now = true;
      if (tag == kDtFlags1 && (val & kDf1Now)) l.bind_now = true;
    }
  }
  if (dynamic_sections != 1) l.error = std::to_string(dynamic_sections) + " dynamic sections";
  return l;
}

TEST(LinkHardening, LibraryHasFullRelro) {
  const Linkage l = linkageOf(TPCOMM_LIBRARY_PATH);
  ASSERT_EQ(l.error, "") << TPCOMM_LIBRARY_PATH;
  EXPECT_TRUE(l.relro) << "no PT_GNU_RELRO segment in " << TPCOMM_LIBRARY_PATH;
  EXPECT_TRUE(l.bind_now) << TPCOMM_LIBRARY_PATH << " is not linked with -z now";
}

TEST(LinkHardening, CliHasFullRelro) {
  const Linkage l = linkageOf(TPCOMM_CLI_PATH);
  ASSERT_EQ(l.error, "") << TPCOMM_CLI_PATH;
  EXPECT_TRUE(l.relro) << "no PT_GNU_RELRO segment in " << TPCOMM_CLI_PATH;
  EXPECT_TRUE(l.bind_now) << TPCOMM_CLI_PATH << " is not linked with -z now";
}

}  // namespace
}  // namespace tpcomm::inspect
