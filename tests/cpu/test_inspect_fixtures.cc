// Inspector tests on real nvcc output: the fixtures of tests/cpu/fixtures/ (one target each),
// the `tpcomm inspect` command line, and libtpcomm.so itself, which must carry SASS for every
// default architecture and PTX for the newest.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/json.h"
#include "inspect/inspect.h"
#include "tests/cpu/support/cli_run.h"
#include "tests/cpu/support/inspect_files.h"

namespace tpcomm::inspect {
namespace {

using test::fixture;
using test::readAll;
using test::tempPath;
using test::writeAll;

// The compute capabilities the issue asks about, and the expected verdict on each, one letter
// per cc: N native, J PTX JIT, - no image, 0 no device code.
const std::vector<std::pair<int, int>> kCcs = {{7, 5},  {8, 0},  {8, 6},  {8, 9}, {9, 0},
                                               {10, 0}, {10, 3}, {12, 0}, {12, 1}};

struct Fixture {
  const char* file;
  std::vector<std::string> images;  // "<kind> <target>", sorted (nvcc's order varies)
  const char* verdicts;             // one letter per kCcs entry
};

const Fixture kFixtures[] = {
    {"sm80.o", {"SASS sm_80"}, "-NNN-----"},
    {"ptx80.o", {"PTX compute_80"}, "-JJJJJJJJ"},
    {"sm90a.o", {"SASS sm_90a"}, "----N----"},
    {"sm100f.o", {"SASS sm_100f"}, "-----NN--"},
    {"sm120_ptx120.o", {"PTX compute_120", "SASS sm_120"}, "-------NN"},
    {"sm120a.o", {"SASS sm_120a"}, "-------N-"},
    {"lto90.o", {"LTO-IR lto_90"}, "---------"},
    {"libmulti.so",
     {"PTX compute_90", "PTX compute_90", "SASS sm_80", "SASS sm_80", "SASS sm_80"},
     "-NNNJJJJJ"},
    {"libnodevice.so", {}, "000000000"},
    // Every image compressed: the stub container is kernel-free and the PTX runs on 9.0+ only
    // once the inspector decompresses (zstd, LZ4).
    {"libzstd80.so",
     {"PTX compute_80", "PTX compute_80", "SASS sm_80", "SASS sm_80", "SASS sm_80"},
     "-NNNJJJJJ"},
    {"liblz480.so",
     {"PTX compute_80", "PTX compute_80", "SASS sm_80", "SASS sm_80", "SASS sm_80"},
     "-NNNJJJJJ"},
};

char letter(VerdictKind k) {
  switch (k) {
    case VerdictKind::kNative:
      return 'N';
    case VerdictKind::kPtxJit:
      return 'J';
    case VerdictKind::kNoImage:
      return '-';
    case VerdictKind::kUnknown:
      return '?';
    default:
      return '0';
  }
}

TEST(InspectFixtures, ImagesAndVerdicts) {
  for (const Fixture& f : kFixtures) {
    SCOPED_TRACE(f.file);
    FileReport r;
    ASSERT_TRUE(inspectFile(fixture(f.file), &r)) << r.errors.front();
    std::vector<std::string> images;
    for (const FatbinContainer& c : r.containers)
      for (const FatbinEntry& e : c.entries)
        images.push_back(std::string(kindName(e.kind)) + " " + targetName(e));
    std::sort(images.begin(), images.end());
    EXPECT_EQ(images, f.images);
    std::string verdicts;
    for (const auto& cc : kCcs) verdicts += letter(verdictFor(r, cc.first, cc.second).kind);
    EXPECT_EQ(verdicts, f.verdicts) << "ccs 7.5 8.0 8.6 8.9 9.0 10.0 10.3 12.0 12.1";
  }
}

TEST(InspectFixtures, DetailsNameTheImage) {
  FileReport r;
  ASSERT_TRUE(inspectFile(fixture("sm90a.o"), &r));
  EXPECT_EQ(verdictFor(r, 9, 0).detail, "sm_90a cubin");
  EXPECT_NE(verdictFor(r, 8, 0).detail.find("only sm_90a SASS"), std::string::npos);
  ASSERT_TRUE(inspectFile(fixture("sm120_ptx120.o"), &r));
  EXPECT_EQ(verdictFor(r, 12, 1).detail, "sm_120 cubin");  // the cubin wins over PTX
  ASSERT_TRUE(inspectFile(fixture("ptx80.o"), &r));
  const std::string jit = verdictFor(r, 9, 0).detail;
  EXPECT_NE(jit.find("PTX compute_80 JIT"), std::string::npos) << jit;
  EXPECT_NE(jit.find("first launch"), std::string::npos) << jit;
  ASSERT_TRUE(inspectFile(fixture("libnodevice.so"), &r));
  EXPECT_NE(verdictFor(r, 9, 0).detail.find("no device code"), std::string::npos);
}

TEST(InspectFixtures, SectionsCompressionAndKernels) {
  FileReport r;
  ASSERT_TRUE(inspectFile(fixture("sm120_ptx120.o"), &r));
  EXPECT_EQ(r.elf_type, kElfRelocatable);
  ASSERT_EQ(r.containers.size(), 1u);
  EXPECT_EQ(r.containers[0].section, ".nv_fatbin");
  ASSERT_EQ(r.containers[0].entries.size(), 2u);
  FatbinEntry cubin = r.containers[0].entries[0], ptx = r.containers[0].entries[1];
  if (cubin.kind != ImageKind::kCubin) std::swap(cubin, ptx);
  EXPECT_FALSE(cubin.compressed);  // nvcc compresses PTX by default, not SASS
  EXPECT_EQ(cubin.kernels, 1);
  EXPECT_EQ(cubin.header_size, 112u);  // sm_100+ cubins carry the long header
  EXPECT_TRUE(ptx.compressed);
  EXPECT_GT(ptx.size, ptx.stored_size);

  ASSERT_TRUE(inspectFile(fixture("lto90.o"), &r));
  ASSERT_EQ(r.containers.size(), 1u);
  EXPECT_EQ(r.containers[0].section, "__nv_relfatbin");

  ASSERT_TRUE(inspectFile(fixture("libmulti.so"), &r));
  EXPECT_EQ(r.elf_type, kElfShared);
  ASSERT_EQ(r.containers.size(), 3u);
  EXPECT_EQ(r.containers[0].entries[0].kernels, 0);  // nvcc's device-link stub
}

// The kernels of one container, "<target> <names...>" per image, for comparing.
std::vector<std::string> kernelsOf(const FatbinContainer& c) {
  std::vector<std::string> out;
  for (const FatbinEntry& e : c.entries) {
    std::string line = targetName(e) + ":";
    for (const std::string& n : e.kernel_names) line += " " + n;
    out.push_back(line);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(InspectFixtures, KernelNamesOfPlainAndCompressedImages) {
  FileReport r;
  ASSERT_TRUE(inspectFile(fixture("sm120_ptx120.o"), &r));
  ASSERT_EQ(r.containers.size(), 1u);
  // The SASS is stored plain, the PTX zstd-compressed (nvcc's default): both are read.
  EXPECT_EQ(kernelsOf(r.containers[0]), (std::vector<std::string>{
                                            "compute_120: _Z12fixtureScalePff",
                                            "sm_120: _Z12fixtureScalePff",
                                        }));
  for (const char* lib : {"libzstd80.so", "liblz480.so"}) {
    SCOPED_TRACE(lib);
    ASSERT_TRUE(inspectFile(fixture(lib), &r)) << r.errors.front();
    const uint64_t codec =
        std::string(lib) == "liblz480.so" ? kFlagCompressedLz4 : kFlagCompressedZstd;
    std::vector<std::vector<std::string>> got;
    for (const FatbinContainer& c : r.containers) {
      for (const FatbinEntry& e : c.entries) {
        EXPECT_TRUE(e.compressed);
        EXPECT_EQ(e.flags & (kFlagCompressedLz4 | kFlagCompressedZstd), codec);
        EXPECT_EQ(e.contents, ImageContents::kRead) << e.problem;
        EXPECT_LT(e.stored_size, e.size);
      }
      got.push_back(kernelsOf(c));
    }
    std::sort(got.begin(), got.end());
    const std::vector<std::vector<std::string>> want = {
        {"compute_80: _Z10fixtureAddPff", "sm_80: _Z10fixtureAddPff"},
        {"compute_80: _Z12fixtureScalePff", "sm_80: _Z12fixtureScalePff"},
        {"sm_80:"},  // the device-link stub: no kernel
    };
    EXPECT_EQ(got, want);
    // A newer GPU JIT-compiles the PTX; nothing is judged on the compressed bytes alone.
    EXPECT_EQ(verdictFor(r, 9, 0).kind, VerdictKind::kPtxJit) << verdictFor(r, 9, 0).detail;
  }
}

TEST(InspectFixtures, ReadErrorsSayWhatIsWrong) {
  FileReport r;
  EXPECT_FALSE(inspectFile(fixture("no-such-file.so"), &r));
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("No such file"), std::string::npos) << r.errors[0];

  const std::string text = tempPath("text.so");
  writeAll(text, "this is not an ELF file\n");
  EXPECT_FALSE(inspectFile(text, &r));
  EXPECT_NE(r.errors[0].find("not an ELF file"), std::string::npos) << r.errors[0];

  const std::string object = readAll(fixture("sm80.o"));
  ASSERT_GT(object.size(), 2000u);
  const std::string cut = tempPath("cut.o");
  writeAll(cut, object.substr(0, 2000));
  EXPECT_FALSE(inspectFile(cut, &r));
  EXPECT_NE(r.errors[0].find("truncated"), std::string::npos) << r.errors[0];

  // A container whose header claims more bytes than its section holds.
  std::string patched = object;
  const size_t magic = patched.find(std::string("\x50\xed\x55\xba", 4));
  ASSERT_NE(magic, std::string::npos);
  patched[magic + 9] = static_cast<char>(patched[magic + 9] + 0x10);  // +4 KiB
  const std::string bad = tempPath("badcontainer.o");
  writeAll(bad, patched);
  EXPECT_FALSE(inspectFile(bad, &r));
  EXPECT_NE(r.errors[0].find("truncated fatbin container"), std::string::npos) << r.errors[0];
}

using test::CliResult;

// Runs `tpcomm inspect <args>`; stderr joins stdout unless the args redirect it.
CliResult runCli(const std::string& args) {
  return test::runCommand(std::string("'") + TPCOMM_CLI_PATH + "' inspect " + args);
}

std::string quoted(const std::string& path) {
  return "'" + path + "'";
}

TEST(InspectCli, ExitCodes) {
  const std::string sm80 = quoted(fixture("sm80.o"));
  EXPECT_EQ(runCli(sm80 + " 2>&1").status, 0);  // no --cc: list only
  EXPECT_EQ(runCli("--cc 8.0 --cc 8.6 " + sm80 + " 2>&1").status, 0);
  const CliResult no = runCli("--cc 9.0 " + sm80 + " 2>&1");
  EXPECT_EQ(no.status, 1);
  EXPECT_NE(no.out.find("CANNOT RUN"), std::string::npos) << no.out;
  EXPECT_EQ(runCli("--cc all-known " + quoted(fixture("libnodevice.so")) + " 2>&1").status, 0);
  EXPECT_EQ(runCli("--cc 9.0 " + quoted(fixture("ptx80.o")) + " 2>&1").status, 0);
  EXPECT_EQ(runCli("--cc 9.0 " + quoted(fixture("ptx80.o")) + " " + sm80 + " 2>&1").status, 1);
  EXPECT_EQ(runCli("--help 2>&1").status, 0);
  EXPECT_EQ(runCli("2>&1").status, 2);                      // no file
  EXPECT_EQ(runCli("--cc 9 " + sm80 + " 2>&1").status, 2);  // bad cc
  EXPECT_EQ(runCli("--bogus " + sm80 + " 2>&1").status, 2);
}

TEST(InspectCli, ReadErrorsExitTwoAndNameTheFile) {
  const std::string missing = fixture("missing.so");
  const CliResult r = runCli("--cc 9.0 " + quoted(missing) + " 2>&1");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find(missing), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("No such file"), std::string::npos) << r.out;

  const std::string text = tempPath("cli_text.so");
  writeAll(text, "#!/bin/sh\necho not ELF\n");
  const CliResult t = runCli(quoted(text) + " " + quoted(fixture("sm80.o")) + " 2>&1");
  EXPECT_EQ(t.status, 2);
  EXPECT_NE(t.out.find("not an ELF file"), std::string::npos) << t.out;
}

TEST(InspectCli, CompressedLibraryRunsByJitOnNewerGpus) {
  const CliResult r = runCli("--cc 9.0 --cc 12.0 " + quoted(fixture("libzstd80.so")) + " 2>&1");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("CANNOT RUN"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("runs via JIT"), std::string::npos) << r.out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(InspectCli, ErrorsArePrintedOnceOnStderr) {
  const std::string missing = fixture("missing.so");
  const std::string cut = tempPath("once_cut.o");
  writeAll(cut, readAll(fixture("sm80.o")).substr(0, 2000));
  const std::string files = quoted(missing) + " " + quoted(cut) + " " + quoted(fixture("sm80.o"));
  const CliResult both = runCli("--cc 8.0 " + files + " 2>&1");
  EXPECT_EQ(both.status, 2);
  EXPECT_EQ(count(both.out, "No such file"), 1u) << both.out;
  EXPECT_EQ(count(both.out, "truncated"), 1u) << both.out;
  const CliResult out = runCli("--cc 8.0 " + files + " 2>/dev/null");
  EXPECT_EQ(count(out.out, "No such file"), 0u) << out.out;
  EXPECT_EQ(count(out.out, "truncated"), 0u) << out.out;
  EXPECT_NE(out.out.find("sm80.o: object file"), std::string::npos) << out.out;  // the rest stays
  const CliResult err = runCli("--cc 8.0 " + files + " 2>&1 >/dev/null");
  EXPECT_EQ(count(err.out, "tpcomm inspect: " + missing + ": cannot open"), 1u) << err.out;
}

TEST(InspectCli, UnknownKernelCountsAreExplained) {
  const CliResult r = runCli(quoted(fixture("lto90.o")) + " 2>&1");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find(" ?1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("?1: kernels not known: LTO IR"), std::string::npos) << r.out;
  // Where every count is known there is no legend.
  const CliResult known = runCli(quoted(fixture("libzstd80.so")) + " 2>&1");
  EXPECT_EQ(known.out.find('?'), std::string::npos) << known.out;
}

TEST(InspectCli, JsonIsValidAndComplete) {
  std::string args = "--json --cc all-known";
  for (const Fixture& f : kFixtures) args += " " + quoted(fixture(f.file));
  const CliResult r = runCli(args + " 2>/dev/null");
  EXPECT_EQ(r.status, 1);  // several fixtures cannot run everywhere
  json::Value root;
  std::string error;
  ASSERT_TRUE(json::parse(r.out, &root, &error)) << error << "\n" << r.out;
  EXPECT_FALSE(root.find("all_can_run")->asBool());
  const std::vector<json::Value>& files = root.find("files")->items();
  ASSERT_EQ(files.size(), std::size(kFixtures));
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(kFixtures[i].file);
    EXPECT_TRUE(files[i].find("errors")->items().empty());
    const std::vector<json::Value>& verdicts = files[i].find("verdicts")->items();
    ASSERT_EQ(verdicts.size(), knownCcs().size());
    // The JSON says what the API says, cc by cc.
    FileReport rep;
    ASSERT_TRUE(inspectFile(fixture(kFixtures[i].file), &rep));
    for (size_t j = 0; j < verdicts.size(); ++j) {
      const Verdict v = verdictFor(rep, knownCcs()[j].first, knownCcs()[j].second);
      EXPECT_EQ(verdicts[j].find("verdict")->asString(), verdictName(v.kind));
      EXPECT_EQ(verdicts[j].find("detail")->asString(), v.detail);
    }
  }
  EXPECT_EQ(files[0].find("verdicts")->items()[8].find("cc")->asString(), "11.0");
  EXPECT_NE(r.out.find("\"target\": \"sm_100f\""), std::string::npos) << r.out;
}

// "75-real,80-real,...,120" -> SASS and PTX architecture numbers (CMAKE_CUDA_ARCHITECTURES
// syntax: NN = SASS + PTX, NN-real = SASS, NN-virtual = PTX).
void parseArchs(const std::string& csv, std::set<int>* sass, std::set<int>* ptx) {
  std::stringstream in(csv);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t dash = item.find('-');
    const int sm = std::stoi(item.substr(0, dash));
    const std::string suffix = dash == std::string::npos ? "" : item.substr(dash + 1);
    if (suffix != "virtual") sass->insert(sm);
    if (suffix != "real") ptx->insert(sm);
  }
}

// The build can never again quietly drop an architecture: every container of libtpcomm.so
// that holds kernels carries SASS for each default architecture and PTX for the newest.
TEST(InspectLibrary, CarriesEveryDefaultArchitecture) {
  if (std::string(TPCOMM_CONFIGURED_ARCHS) != TPCOMM_DEFAULT_ARCHS)
    GTEST_SKIP() << "built with TPCOMM_CUDA_ARCHS=" << TPCOMM_CONFIGURED_ARCHS
                 << ", not the default " << TPCOMM_DEFAULT_ARCHS
                 << ": the default coverage cannot be checked on this build";
  std::set<int> want_sass, want_ptx;
  parseArchs(TPCOMM_DEFAULT_ARCHS, &want_sass, &want_ptx);
  ASSERT_FALSE(want_sass.empty());
  ASSERT_FALSE(want_ptx.empty());

  FileReport r;
  ASSERT_TRUE(inspectFile(TPCOMM_LIBRARY_PATH, &r)) << r.errors.front();
  int with_kernels = 0;
  for (size_t i = 0; i < r.containers.size(); ++i) {
    const FatbinContainer& c = r.containers[i];
    if (c.section != ".nv_fatbin") continue;
    std::set<int> sass, ptx;
    bool kernels = false;
    for (const FatbinEntry& e : c.entries) {
      kernels |= e.kind != ImageKind::kCubin || e.kernels != 0;
      if (e.variant != ArchVariant::kPlain) continue;  // a/f images do not cover the family
      if (e.kind == ImageKind::kCubin) sass.insert(e.sm);
      if (e.kind == ImageKind::kPtx) ptx.insert(e.sm);
    }
    if (!kernels) continue;
    ++with_kernels;
    for (int sm : want_sass)
      EXPECT_TRUE(sass.count(sm)) << "container " << i + 1 << ": no sm_" << sm;
    for (int sm : want_ptx)
      EXPECT_TRUE(ptx.count(sm)) << "container " << i + 1 << ": no compute_" << sm;
  }
  EXPECT_GT(with_kernels, 0) << TPCOMM_LIBRARY_PATH << " carries no kernels";
  for (int sm : want_sass)
    EXPECT_EQ(verdictFor(r, sm / 10, sm % 10).kind, VerdictKind::kNative) << "cc " << sm;
  // `--cc all-known` passes on tpcomm's own library: every cc runs, natively where built.
  for (const auto& cc : knownCcs()) {
    const Verdict v = verdictFor(r, cc.first, cc.second);
    EXPECT_TRUE(v.canRun()) << "cc " << cc.first << "." << cc.second << ": " << v.detail;
  }
}

// The product library carries neither the inspector nor its decompressors (they live in the
// tpcomm_inspect library that the CLI and the tests link): none of their strings, no NEEDED entry.
TEST(InspectLibrary, ProductLibraryHasNoInspector) {
  const std::string lib = readAll(TPCOMM_LIBRARY_PATH);
  ASSERT_GT(lib.size(), 4096u) << TPCOMM_LIBRARY_PATH;
  for (const char* s : {"no fatbin container at", "fatbin sections overlap", "liblz4.so",
                        "libzstd.so", "LZ4_decompress_safe", "ZSTD_decompress"})
    EXPECT_EQ(lib.find(s), std::string::npos) << TPCOMM_LIBRARY_PATH << " contains \"" << s << "\"";
}

// Every compute capability `--cc all-known` names has native SASS in the default build (the
// README's "sm_75 to sm_120" promise), checked on the list itself, so every build checks it.
TEST(InspectLibrary, DefaultArchitecturesCoverEveryKnownCc) {
  std::set<int> sass, ptx;
  parseArchs(TPCOMM_DEFAULT_ARCHS, &sass, &ptx);
  for (const auto& cc : knownCcs()) {
    bool native = false;
    for (int sm : sass) native |= sm / 10 == cc.first && sm % 10 <= cc.second;
    EXPECT_TRUE(native) << "cc " << cc.first << "." << cc.second
                        << " has no SASS in the default architectures " << TPCOMM_DEFAULT_ARCHS;
  }
}

}  // namespace
}  // namespace tpcomm::inspect
