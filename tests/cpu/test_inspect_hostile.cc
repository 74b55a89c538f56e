// The inspector on files built to hurt it, and on images it cannot fully read: aliased section
// headers (time bound), corrupt embedded cubins, unknown codecs, decompression bombs. What it
// cannot see is "unknown", never "runs" or "CANNOT RUN".
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "inspect/fatbin.h"
#include "inspect/inspect.h"
#include "tests/cpu/support/cli_run.h"
#include "tests/cpu/support/inspect_files.h"

namespace tpcomm::inspect {
namespace {

using test::fixture;
using test::readAll;
using test::tempPath;
using test::writeAll;

void put(std::string* s, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) (*s)[at + i] = static_cast<char>(v >> (8 * i));
}

void append(std::string* s, uint64_t v, int bytes) {
  s->resize(s->size() + bytes);
  put(s, s->size() - bytes, v, bytes);
}

// A relocatable x86-64 ELF file whose bytes are `payload` (at offset 64), with one section header
// named .nv_fatbin per (offset, size) range of the payload (nvcc writes one, for all of it).
using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;
std::string elfWithFatbinSections(const std::string& payload, const Ranges& ranges) {
  const std::string names = std::string("\0.shstrtab\0.nv_fatbin\0", 22);
  std::string f(64, '\0');
  f.replace(0, 4,
            "\x7f"
            "ELF");
  f[4] = 2;  // 64-bit
  f[5] = 1;  // little-endian
  f[6] = 1;
  put(&f, 16, 1, 2);   // ET_REL
  put(&f, 18, 62, 2);  // x86-64
  put(&f, 20, 1, 4);
  f += payload;
  const uint64_t names_at = f.size();
  f += names;
  while (f.size() % 8) f.push_back('\0');
  const uint64_t shoff = f.size();
  put(&f, 40, shoff, 8);
  put(&f, 52, 64, 2);  // e_ehsize
  put(&f, 58, 64, 2);  // e_shentsize
  put(&f, 60, 2 + ranges.size(), 2);
  put(&f, 62, 1, 2);  // e_shstrndx
  auto section = [&f](uint32_t name, uint32_t type, uint64_t offset, uint64_t size) {
    append(&f, name, 4);
    append(&f, type, 4);
    append(&f, 0, 8);  // flags
    append(&f, 0, 8);  // addr
    append(&f, offset, 8);
    append(&f, size, 8);
    append(&f, 0, 4);  // link
    append(&f, 0, 4);  // info
    append(&f, 8, 8);  // addralign
    append(&f, 0, 8);  // entsize
  };
  section(0, 0, 0, 0);
  section(1, 3, names_at, names.size());                                // SHT_STRTAB
  for (const auto& r : ranges) section(11, 1, 64 + r.first, r.second);  // SHT_PROGBITS
  return f;
}

// The fat-binary section of an nvcc-built fixture.
std::string fatbinOf(const std::string& object) {
  const size_t magic = object.find(std::string("\x50\xed\x55\xba", 4));
  EXPECT_NE(magic, std::string::npos);
  const uint64_t body = static_cast<uint8_t>(object[magic + 8]) |
                        static_cast<uint64_t>(static_cast<uint8_t>(object[magic + 9])) << 8 |
                        static_cast<uint64_t>(static_cast<uint8_t>(object[magic + 10])) << 16;
  return object.substr(magic, 16 + body);
}

TEST(InspectHostile, AliasedSectionsAreParsedOnce) {
  // About 1 MiB of real containers (each one sm_80 cubin with one kernel) back to back.
  const std::string one = fatbinOf(readAll(fixture("sm80.o")));
  std::string fatbin;
  while (fatbin.size() < (1u << 20)) fatbin += one;
  const size_t containers = fatbin.size() / one.size();
  const std::string path = tempPath("aliased.o");
  writeAll(path, elfWithFatbinSections(fatbin, Ranges(4096, {0, fatbin.size()})));

  const auto start = std::chrono::steady_clock::now();
  FileReport r;
  ASSERT_TRUE(inspectFile(path, &r)) << r.errors.front();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  printf("4096 aliases of a %zu-byte fat binary: %.1f ms\n", fatbin.size(), ms);
  EXPECT_LT(ms, 1000.0);
  EXPECT_EQ(r.containers.size(), containers);  // listed once, not 4096 times
  EXPECT_EQ(verdictFor(r, 8, 6).kind, VerdictKind::kNative);
}

TEST(InspectHostile, OverlappingSectionsBeyondTheFileSizeAreRefused) {
  const std::string one = fatbinOf(readAll(fixture("sm80.o")));
  const uint64_t c = one.size();
  // Every run of whole containers of three: six distinct ranges that each parse, ten containers'
  // worth of bytes from a file of three.
  const Ranges ranges = {{0, c}, {c, c}, {2 * c, c}, {0, 2 * c}, {c, 2 * c}, {0, 3 * c}};
  const std::string path = tempPath("overlap.o");
  writeAll(path, elfWithFatbinSections(one + one + one, ranges));
  FileReport r;
  EXPECT_FALSE(inspectFile(path, &r));
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors[0].find("fatbin sections overlap"), std::string::npos) << r.errors[0];
  // Ranges that fit the file are all read.
  writeAll(path, elfWithFatbinSections(one + one + one, {{0, c}, {c, 2 * c}}));
  ASSERT_TRUE(inspectFile(path, &r)) << r.errors.front();
  EXPECT_EQ(r.containers.size(), 3u);
}

// sm80.o with its embedded cubin's ELF header patched at `field` (2 or 8 bytes) to `value`.
std::string corruptCubin(size_t field, int bytes, uint64_t value) {
  std::string object = readAll(fixture("sm80.o"));
  const size_t fatbin = object.find(std::string("\x50\xed\x55\xba", 4));
  const size_t cubin = object.find(
      "\x7f"
      "ELF",
      fatbin);
  EXPECT_NE(cubin, std::string::npos);
  put(&object, cubin + field, value, bytes);
  return object;
}

TEST(InspectHostile, CorruptCubinIsUnknownNotKernelFree) {
  struct Case {
    const char* name;
    size_t field;
    int bytes;
    uint64_t value;
    const char* problem;
  };
  const Case cases[] = {
      {"shoff0.o", 40, 8, 0, "no section table (e_shoff 0)"},
      {"shstrndx.o", 62, 2, 0x7ff0, "no section names (bad e_shstrndx)"},
      {"shoff_far.o", 40, 8, 1ull << 40, "corrupt cubin: truncated"},
      {"machine.o", 18, 2, 62, "not CUDA"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = tempPath(c.name);
    writeAll(path, corruptCubin(c.field, c.bytes, c.value));
    FileReport r;
    ASSERT_TRUE(inspectFile(path, &r)) << r.errors.front();  // the file itself reads fine
    ASSERT_EQ(r.containers.size(), 1u);
    const FatbinEntry& e = r.containers[0].entries.at(0);
    EXPECT_EQ(e.contents, ImageContents::kCorrupt);
    EXPECT_NE(e.problem.find(c.problem), std::string::npos) << e.problem;
    EXPECT_EQ(e.kernels, -1);
    // The intact file: CANNOT RUN on 9.0, native on 8.0. Corrupt: neither can be said.
    for (int major : {8, 9}) {
      const Verdict v = verdictFor(r, major, 0);
      EXPECT_EQ(v.kind, VerdictKind::kUnknown) << v.detail;
      EXPECT_FALSE(v.canRun());
      EXPECT_NE(v.detail.find(c.problem), std::string::npos) << v.detail;
    }
  }
}

test::CliResult runCli(const std::string& args) {
  return test::runCommand(std::string("'") + TPCOMM_CLI_PATH + "' inspect " + args);
}

TEST(InspectHostile, CliExitCodeOfAnUnknownVerdictIsThree) {
  const std::string path = tempPath("cli_shoff0.o");
  writeAll(path, corruptCubin(40, 8, 0));
  const test::CliResult corrupt = runCli("--cc 9.0 '" + path + "' 2>&1");
  EXPECT_EQ(corrupt.status, 3) << corrupt.out;
  EXPECT_NE(corrupt.out.find("UNKNOWN"), std::string::npos) << corrupt.out;
  EXPECT_NE(corrupt.out.find("e_shoff 0"), std::string::npos) << corrupt.out;
  // Certain failures outweigh the unknown: the intact sm_80 object cannot run on 9.0.
  const test::CliResult with_intact =
      runCli("--cc 9.0 '" + path + "' '" + fixture("sm80.o") + "' 2>&1");
  EXPECT_EQ(with_intact.status, 1) << with_intact.out;
  EXPECT_EQ(runCli("--cc 9.0 '" + fixture("sm80.o") + "' 2>&1").status, 1);
}

// A hand-made container of one entry with the given flags, sizes and payload.
std::string entryContainer(uint16_t kind, uint32_t sm, uint64_t flags, const std::string& payload,
                           uint32_t compressed_size, uint64_t uncompressed_size) {
  const uint64_t padded = (payload.size() + 7) / 8 * 8;
  std::string h;
  append(&h, kind, 2);
  append(&h, 0x0101, 2);
  append(&h, 64, 4);
  append(&h, padded, 8);
  append(&h, compressed_size, 4);
  append(&h, 0, 4);
  append(&h, 0x10008, 4);
  append(&h, sm, 4);
  append(&h, 0, 8);
  append(&h, flags, 8);
  append(&h, 0, 8);
  append(&h, uncompressed_size, 8);
  std::string body = h + payload + std::string(padded - payload.size(), '\0');
  std::string c;
  append(&c, kFatbinMagic, 4);
  append(&c, 1, 2);
  append(&c, 16, 2);
  append(&c, body.size(), 8);
  return c + body;
}

FileReport reportOf(const std::string& fatbin) {
  FileReport r;
  std::string error;
  EXPECT_TRUE(parseFatbinSection(".nv_fatbin", reinterpret_cast<const uint8_t*>(fatbin.data()),
                                 fatbin.size(), &r.containers, &error))
      << error;
  return r;
}

TEST(InspectHostile, ImagesThatCannotBeOpenedAreUnknown) {
  const std::string junk(40, 'x');
  struct Case {
    uint64_t flags;
    uint32_t compressed;
    uint64_t uncompressed;
    ImageContents contents;
    const char* problem;
  };
  const Case cases[] = {
      {0x1011, 40, 900, ImageContents::kNotOpened, "codec the inspector does not know"},
      {0xa011, 40, 900, ImageContents::kNotOpened, "codec the inspector does not know"},
      {0x8011, 40, 900, ImageContents::kCorrupt, "zstd: "},
      {0x2011, 40, 900, ImageContents::kCorrupt, "lz4: "},
      {0x8011, 80, 900, ImageContents::kCorrupt, "does not fit the payload"},
      // A header claiming 4 GiB from 40 bytes is not inflated.
      {0x8011, 40, 4ull << 30, ImageContents::kNotOpened, "decompression budget"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.problem);
    const FileReport r =
        reportOf(entryContainer(2, 80, c.flags, junk, c.compressed, c.uncompressed));
    const FatbinEntry& e = r.containers.at(0).entries.at(0);
    EXPECT_EQ(e.contents, c.contents);
    EXPECT_NE(e.problem.find(c.problem), std::string::npos) << e.problem;
    const Verdict v90 = verdictFor(r, 9, 0);  // no image for 9.0 but maybe no kernel either
    EXPECT_EQ(v90.kind, VerdictKind::kUnknown) << v90.detail;
    EXPECT_NE(v90.detail.find("whether it holds kernels is not known"), std::string::npos)
        << v90.detail;
    // On 8.0 the sm_80 cubin is what the driver loads: broken or never opened, it is not known
    // to run (the header's claims are all that was seen).
    const Verdict v80 = verdictFor(r, 8, 0);
    EXPECT_EQ(v80.kind, VerdictKind::kUnknown) << v80.detail;
    EXPECT_NE(v80.detail.find(c.problem), std::string::npos) << v80.detail;
  }
}

// The same 16 junk bytes claiming 1 MiB (tried: corrupt), 1 GiB (past the file's budget) or
// 16 GiB (past the per-image cap): the sm_80 cubin the driver would load was never seen intact,
// so on 8.0 the CLI says UNKNOWN and exits 3 every time, and the claims cost no time.
TEST(InspectHostile, CliImageBeyondTheBudgetIsUnknownNotNative) {
  const std::string junk(16, 'x');
  for (const uint64_t claim : {1ull << 20, 1ull << 30, 16ull << 30}) {
    SCOPED_TRACE(claim);
    const std::string container = entryContainer(2, 80, 0x8011, junk, 16, claim);
    const std::string path = tempPath("claim_" + std::to_string(claim) + ".o");
    writeAll(path, elfWithFatbinSections(container, {{0, container.size()}}));
    const auto start = std::chrono::steady_clock::now();
    const test::CliResult cli = runCli("--cc 8.0 '" + path + "' 2>&1");
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(cli.status, 3) << cli.out;
    EXPECT_NE(cli.out.find("UNKNOWN"), std::string::npos) << cli.out;
    EXPECT_EQ(cli.out.find("runs natively"), std::string::npos) << cli.out;
    EXPECT_LT(ms, 5000.0) << "a " << claim << "-byte claim was inflated";
  }
}

TEST(InspectHostile, DecompressionBudgetIsSharedByTheFile) {
  const std::string junk(40, 'x');
  const std::string fatbin =
      entryContainer(2, 80, 0x8011, junk, 40, 1000) + entryContainer(2, 80, 0x8011, junk, 40, 1000);
  DecompressBudget budget{1500};
  std::vector<FatbinContainer> out;
  std::string error;
  ASSERT_TRUE(parseFatbinSection(".nv_fatbin", reinterpret_cast<const uint8_t*>(fatbin.data()),
                                 fatbin.size(), &out, &error, &budget))
      << error;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].entries[0].contents, ImageContents::kCorrupt);    // tried: junk
  EXPECT_EQ(out[1].entries[0].contents, ImageContents::kNotOpened);  // 1000 > 500 left
  EXPECT_EQ(budget.left, 500u);
}

}  // namespace
}  // namespace tpcomm::inspect
