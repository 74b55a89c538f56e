// Inspector unit tests on hand-built fat binaries: the container walk (header sizes, padding,
// truncation), the flag bits, and the compatibility rules. The nvcc-built fixtures are checked
// in test_inspect_fixtures.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/json.h"
#include "inspect/fatbin.h"
#include "inspect/inspect.h"
#include "inspect/report.h"

namespace tpcomm::inspect {
namespace {

void put16(std::string* s, uint16_t v) {
  for (int i = 0; i < 2; ++i) s->push_back(static_cast<char>(v >> (8 * i)));
}
void put32(std::string* s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s->push_back(static_cast<char>(v >> (8 * i)));
}
void put64(std::string* s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s->push_back(static_cast<char>(v >> (8 * i)));
}

struct FakeEntry {
  uint16_t kind = 2;
  uint32_t sm = 80;
  uint64_t flags = 0x11;
  uint32_t header_size = 64;
  uint32_t payload = 40;  // bytes, padded to 8 in the file
  uint32_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
};

// One container laid out as nvcc 13 writes it (see src/inspect/fatbin.h).
std::string container(const std::vector<FakeEntry>& entries) {
  std::string body;
  for (const FakeEntry& e : entries) {
    const uint64_t padded = (e.payload + 7) / 8 * 8;
    std::string h;
    put16(&h, e.kind);
    put16(&h, 0x0101);
    put32(&h, e.header_size);
    put64(&h, padded);
    put32(&h, e.compressed_size);
    put32(&h, e.header_size > 64 ? 64 : 0);
    put32(&h, 0x10008);
    put32(&h, e.sm);
    put32(&h, 0);
    put32(&h, 0);
    put64(&h, e.flags);
    put64(&h, 0);
    put64(&h, e.uncompressed_size);
    h.resize(e.header_size, '\0');
    body += h + std::string(padded, 'x');
  }
  std::string c;
  put32(&c, kFatbinMagic);
  put16(&c, 1);
  put16(&c, 16);
  put64(&c, body.size());
  return c + body;
}

bool parse(const std::string& bytes, std::vector<FatbinContainer>* out, std::string* error) {
  return parseFatbinSection(".nv_fatbin", reinterpret_cast<const uint8_t*>(bytes.data()),
                            bytes.size(), out, error);
}

TEST(InspectFatbin, WalksByEachEntryHeadersOwnSize) {
  std::vector<FakeEntry> in(5);
  const uint32_t sizes[] = {64, 80, 112, 120, 72};  // 72: a size no nvcc writes today
  for (int i = 0; i < 5; ++i) {
    in[i].header_size = sizes[i];
    in[i].sm = 80 + i;
    in[i].payload = 13 * (i + 1);
  }
  std::vector<FatbinContainer> out;
  std::string error;
  ASSERT_TRUE(parse(container(in), &out, &error)) << error;
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].entries.size(), 5u);
  uint64_t offset = 16;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(out[0].entries[i].sm, 80 + i);
    EXPECT_EQ(out[0].entries[i].header_size, sizes[i]);
    EXPECT_EQ(out[0].entries[i].offset, offset);
    offset += sizes[i] + (13 * (i + 1) + 7) / 8 * 8;
  }
}

TEST(InspectFatbin, SeveralContainersBackToBackWithPadding) {
  FakeEntry a, b;
  b.sm = 90;
  const std::string bytes = container({a}) + container({b}) + std::string(8, '\0') +
                            container({a, b}) + std::string(24, '\0');
  std::vector<FatbinContainer> out;
  std::string error;
  ASSERT_TRUE(parse(bytes, &out, &error)) << error;
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].entries[0].sm, 90);
  EXPECT_EQ(out[2].entries.size(), 2u);
  EXPECT_EQ(out[2].offset, out[1].offset + out[1].size + 8);
}

TEST(InspectFatbin, KindsVariantsAndCompressionFromFlags) {
  FakeEntry ptx_a, cubin_f, lto, zstd, lz4, unknown;
  ptx_a.kind = 1;
  ptx_a.flags = 0x100011;
  cubin_f.flags = 0x1200011;
  cubin_f.sm = 100;
  lto.kind = 8;
  zstd.flags = 0x8011;
  zstd.compressed_size = 37;
  zstd.uncompressed_size = 900;
  lz4.flags = 0x2011;
  unknown.kind = 0x40;
  std::vector<FatbinContainer> out;
  std::string error;
  ASSERT_TRUE(parse(container({ptx_a, cubin_f, lto, zstd, lz4, unknown}), &out, &error)) << error;
  const std::vector<FatbinEntry>& e = out[0].entries;
  ASSERT_EQ(e.size(), 6u);
  EXPECT_EQ(e[0].kind, ImageKind::kPtx);
  EXPECT_EQ(e[0].variant, ArchVariant::kArchSpecific);
  EXPECT_EQ(targetName(e[0]), "compute_80a");
  EXPECT_EQ(e[1].variant, ArchVariant::kFamilySpecific);
  EXPECT_EQ(targetName(e[1]), "sm_100f");
  EXPECT_EQ(e[2].kind, ImageKind::kLtoIr);
  EXPECT_EQ(targetName(e[2]), "lto_80");
  EXPECT_TRUE(e[3].compressed);
  EXPECT_EQ(e[3].stored_size, 37u);
  EXPECT_EQ(e[3].size, 900u);
  EXPECT_TRUE(e[4].compressed);
  EXPECT_FALSE(e[0].compressed);
  EXPECT_EQ(e[5].kind, ImageKind::kUnknown);
  EXPECT_EQ(e[1].kernels, -1);  // the payload is no ELF file: unknown, not zero
}

TEST(InspectFatbin, TruncatedContainerIsAnError) {
  std::string bytes = container({FakeEntry()});
  bytes.resize(bytes.size() - 8);
  std::vector<FatbinContainer> out;
  std::string error;
  EXPECT_FALSE(parse(bytes, &out, &error));
  EXPECT_NE(error.find("truncated fatbin container at .nv_fatbin+0x0"), std::string::npos) << error;
}

TEST(InspectFatbin, EntryLargerThanItsContainerIsAnError) {
  std::string bytes = container({FakeEntry()});
  bytes[16 + 8] = static_cast<char>(0xf0);  // payload size beyond the container
  std::vector<FatbinContainer> out;
  std::string error;
  EXPECT_FALSE(parse(bytes, &out, &error));
  EXPECT_NE(error.find("truncated fatbin entry"), std::string::npos) << error;
}

TEST(InspectFatbin, BadHeaderSizeAndBadMagicAreErrors) {
  FakeEntry tiny;
  tiny.header_size = 64;
  std::string bytes = container({tiny});
  bytes[16 + 4] = 8;  // an entry header of 8 bytes would make the walk loop or misread
  std::vector<FatbinContainer> out;
  std::string error;
  EXPECT_FALSE(parse(bytes, &out, &error));
  EXPECT_NE(error.find("bad fatbin entry header size 8"), std::string::npos) << error;

  error.clear();
  EXPECT_FALSE(parse(container({FakeEntry()}) + "garbage!", &out, &error));
  EXPECT_NE(error.find("no fatbin container"), std::string::npos) << error;
}

// An image as read from a real file: cubins and PTX opened, one kernel each.
FatbinEntry entry(ImageKind kind, int sm, ArchVariant v = ArchVariant::kPlain) {
  FatbinEntry e;
  e.kind = kind;
  e.sm = sm;
  e.variant = v;
  if (kind == ImageKind::kCubin || kind == ImageKind::kPtx) {
    e.contents = ImageContents::kRead;
    e.kernel_names = {"_Z6kernelv"};
    e.kernels = 1;
  }
  return e;
}

TEST(InspectRules, CubinPtxAndVariants) {
  const auto cubin = ImageKind::kCubin;
  const auto ptx = ImageKind::kPtx;
  const auto a = ArchVariant::kArchSpecific;
  const auto f = ArchVariant::kFamilySpecific;
  // Plain cubin: same major, minor <= device's.
  EXPECT_EQ(entryCompat(entry(cubin, 80), 8, 6), Compat::kNative);
  EXPECT_EQ(entryCompat(entry(cubin, 86), 8, 0), Compat::kNone);
  EXPECT_EQ(entryCompat(entry(cubin, 80), 9, 0), Compat::kNone);
  EXPECT_EQ(entryCompat(entry(cubin, 100), 10, 3), Compat::kNative);
  // `a`: exactly that cc.
  EXPECT_EQ(entryCompat(entry(cubin, 90, a), 9, 0), Compat::kNative);
  EXPECT_EQ(entryCompat(entry(cubin, 100, a), 10, 3), Compat::kNone);
  EXPECT_EQ(entryCompat(entry(cubin, 120, a), 12, 1), Compat::kNone);
  // `f`: the family, same major and minor <= device's.
  EXPECT_EQ(entryCompat(entry(cubin, 100, f), 10, 3), Compat::kNative);
  EXPECT_EQ(entryCompat(entry(cubin, 103, f), 10, 0), Compat::kNone);
  EXPECT_EQ(entryCompat(entry(cubin, 100, f), 11, 0), Compat::kNone);
  EXPECT_EQ(entryCompat(entry(cubin, 120, f), 12, 1), Compat::kNative);
  // PTX: anything at or above, except a (exact) and f (family).
  EXPECT_EQ(entryCompat(entry(ptx, 80), 12, 1), Compat::kJit);
  EXPECT_EQ(entryCompat(entry(ptx, 86), 9, 0), Compat::kJit);
  EXPECT_EQ(entryCompat(entry(ptx, 89), 8, 6), Compat::kNone);
  EXPECT_EQ(entryCompat(entry(ptx, 90, a), 9, 0), Compat::kJit);
  EXPECT_EQ(entryCompat(entry(ptx, 90, a), 10, 0), Compat::kNone);
  EXPECT_EQ(entryCompat(entry(ptx, 100, f), 10, 3), Compat::kJit);
  EXPECT_EQ(entryCompat(entry(ptx, 100, f), 12, 0), Compat::kNone);
  // LTO IR is never loaded by the driver.
  EXPECT_EQ(entryCompat(entry(ImageKind::kLtoIr, 90), 9, 0), Compat::kNone);
}

FatbinContainer make(std::vector<FatbinEntry> entries, const char* section = ".nv_fatbin") {
  FatbinContainer c;
  c.section = section;
  c.entries = std::move(entries);
  return c;
}

TEST(InspectRules, EveryContainerMustRun) {
  FileReport r;
  r.containers.push_back(make({entry(ImageKind::kCubin, 80), entry(ImageKind::kCubin, 90)}));
  r.containers.push_back(make({entry(ImageKind::kCubin, 80), entry(ImageKind::kPtx, 80)}));
  EXPECT_EQ(verdictFor(r, 8, 6).kind, VerdictKind::kNative);
  EXPECT_EQ(verdictFor(r, 8, 6).detail, "sm_80 cubin");
  const Verdict v90 = verdictFor(r, 9, 0);
  EXPECT_EQ(v90.kind, VerdictKind::kPtxJit);
  EXPECT_NE(v90.detail.find("compute_80"), std::string::npos) << v90.detail;
  EXPECT_NE(v90.detail.find("first launch"), std::string::npos) << v90.detail;
  const Verdict v75 = verdictFor(r, 7, 5);
  EXPECT_EQ(v75.kind, VerdictKind::kNoImage);
  EXPECT_NE(v75.detail.find("container 1"), std::string::npos) << v75.detail;
  EXPECT_FALSE(v75.canRun());
}

TEST(InspectRules, KernelFreeContainersAndRelocatableCode) {
  FileReport r;
  FatbinEntry stub = entry(ImageKind::kCubin, 75);
  stub.kernel_names.clear();  // nvcc's device-link stub
  stub.kernels = 0;
  r.containers.push_back(make({stub}));
  EXPECT_EQ(verdictFor(r, 9, 0).kind, VerdictKind::kNoDeviceCode);
  r.containers.push_back(make({entry(ImageKind::kCubin, 90)}, "__nv_relfatbin"));
  // .nv_fatbin is what the driver loads: the relocatable copy does not count.
  EXPECT_EQ(verdictFor(r, 9, 0).kind, VerdictKind::kNoDeviceCode);
  r.containers.erase(r.containers.begin());
  const Verdict v = verdictFor(r, 9, 0);
  EXPECT_EQ(v.kind, VerdictKind::kNative);
  EXPECT_NE(v.detail.find("__nv_relfatbin"), std::string::npos) << v.detail;
  EXPECT_EQ(verdictFor(FileReport(), 9, 0).kind, VerdictKind::kNoDeviceCode);
  EXPECT_TRUE(verdictFor(FileReport(), 9, 0).canRun());
  // An unreadable file cannot be vouched for, whatever was read before the fault: unknown,
  // neither "runs" nor "cannot run".
  r.errors.push_back("truncated fatbin container at .nv_fatbin+0x40");
  EXPECT_EQ(verdictFor(r, 9, 0).kind, VerdictKind::kUnknown);
  EXPECT_FALSE(verdictFor(r, 9, 0).canRun());
  EXPECT_NE(verdictFor(r, 9, 0).detail.find("could not be read"), std::string::npos);
}

TEST(InspectRules, AnyReadImageTellsForItsWholeContainer) {
  // One translation unit for several targets: the sm_80 cubin without kernels says the compute_90
  // PTX beside it has none either, whatever the PTX is.
  FileReport r;
  FatbinEntry empty = entry(ImageKind::kCubin, 80);
  empty.kernel_names.clear();
  empty.kernels = 0;
  FatbinEntry unread_ptx = entry(ImageKind::kPtx, 90);
  unread_ptx.contents = ImageContents::kNotOpened;
  unread_ptx.kernels = -1;
  r.containers.push_back(make({empty, unread_ptx}));
  EXPECT_EQ(verdictFor(r, 7, 5).kind, VerdictKind::kNoDeviceCode);
  // Nothing read: unknown where no image fits, and unknown where the fitting image was never
  // opened (it may be junk whose header claims anything).
  FatbinEntry unread_cubin = entry(ImageKind::kCubin, 80);
  unread_cubin.contents = ImageContents::kNotOpened;
  unread_cubin.problem = "compressed with a codec the inspector does not know (flags 0x1011)";
  unread_ptx.problem = "not decompressed: 1073741824 bytes exceed the inspector's budget";
  r.containers = {make({unread_cubin, unread_ptx})};
  EXPECT_EQ(verdictFor(r, 7, 5).kind, VerdictKind::kUnknown);
  EXPECT_NE(verdictFor(r, 7, 5).detail.find("codec"), std::string::npos);
  EXPECT_EQ(verdictFor(r, 8, 6).kind, VerdictKind::kUnknown);
  EXPECT_NE(verdictFor(r, 8, 6).detail.find("could not be checked: compressed with a codec"),
            std::string::npos)
      << verdictFor(r, 8, 6).detail;
  EXPECT_EQ(verdictFor(r, 9, 0).kind, VerdictKind::kUnknown);
  EXPECT_NE(verdictFor(r, 9, 0).detail.find("budget"), std::string::npos);
  // The same images beside a read one that fits: the read one decides.
  FatbinEntry read_cubin = entry(ImageKind::kCubin, 86);
  r.containers = {make({unread_cubin, unread_ptx, read_cubin})};
  EXPECT_EQ(verdictFor(r, 8, 6).kind, VerdictKind::kNative);
  // A container without any image holds nothing.
  EXPECT_EQ(verdictFor(FileReport{"", kElfShared, {make({})}, {}}, 9, 0).kind,
            VerdictKind::kNoDeviceCode);
  // A container known to hold kernels and lacking an image decides: CANNOT RUN, not unknown.
  r.containers.push_back(make({entry(ImageKind::kCubin, 86)}));
  EXPECT_EQ(verdictFor(r, 8, 0).kind, VerdictKind::kNoImage);
}

TEST(InspectRules, ParseCc) {
  int major = 0, minor = 0;
  EXPECT_TRUE(parseCc("9.0", &major, &minor));
  EXPECT_EQ(major, 9);
  EXPECT_EQ(minor, 0);
  EXPECT_TRUE(parseCc("12.1", &major, &minor));
  EXPECT_EQ(major, 12);
  EXPECT_EQ(minor, 1);
  for (const char* bad : {"9", "9.", ".0", "9.10", "a.b", "0.0", "120.0", "9.0a", ""})
    EXPECT_FALSE(parseCc(bad, &major, &minor)) << bad;
  EXPECT_EQ(knownCcs().size(), 11u);
}

TEST(InspectReport, JsonHasTheDocumentedShape) {
  FileReport r;
  r.path = "dir/\"odd\\name\".so";
  r.elf_type = kElfShared;
  r.containers.push_back(make({entry(ImageKind::kCubin, 90, ArchVariant::kArchSpecific)}));
  json::Value root;
  std::string error;
  ASSERT_TRUE(json::parse(jsonReport({r}, {{9, 0}, {8, 0}}), &root, &error)) << error;
  ASSERT_TRUE(root.find("all_can_run") && root.find("all_can_run")->isBool());
  EXPECT_FALSE(root.find("all_can_run")->asBool());
  const json::Value& f = root.find("files")->items().at(0);
  EXPECT_EQ(f.find("path")->asString(), r.path);
  EXPECT_EQ(f.find("elf_type")->asString(), "shared object");
  const json::Value& e = f.find("containers")->items().at(0).find("entries")->items().at(0);
  EXPECT_EQ(e.find("kind")->asString(), "SASS");
  EXPECT_EQ(e.find("target")->asString(), "sm_90a");
  EXPECT_EQ(e.find("variant")->asString(), "a");
  EXPECT_EQ(e.find("contents")->asString(), "read");
  EXPECT_EQ(e.find("kernels")->asDouble(), 1.0);
  ASSERT_EQ(e.find("kernel_names")->items().size(), 1u);
  EXPECT_EQ(e.find("kernel_names")->items()[0].asString(), "_Z6kernelv");
  const std::vector<json::Value>& v = f.find("verdicts")->items();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].find("cc")->asString(), "9.0");
  EXPECT_EQ(v[0].find("verdict")->asString(), "native");
  EXPECT_TRUE(v[0].find("can_run")->asBool());
  EXPECT_EQ(v[1].find("verdict")->asString(), "no-image");
  EXPECT_FALSE(v[1].find("can_run")->asBool());
  EXPECT_FALSE(allCanRun({r}, {{9, 0}, {8, 0}}));
  EXPECT_TRUE(allCanRun({r}, {{9, 0}}));
}

}  // namespace
}  // namespace tpcomm::inspect
