// `tpcomm doctor`'s judgement (tools/doctor/doctor_findings.h, tools/doctor/doctor_coverage.h):
// hand-made facts from the topology fixtures and the inspector fixtures in, findings with fixes and
// the exit code out. 0: nothing costs speed; 1: something does (with the fix); 2: no GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cpu/support/topo_fixture.h"
#include "tools/doctor/doctor_findings.h"

namespace tpcomm::cli {
namespace {

const Finding* findingWith(const std::vector<Finding>& fs, const std::string& part) {
  for (const Finding& f : fs)
    if (test::contains(f.what, part)) return &f;
  return nullptr;
}

std::string dump(const std::vector<Finding>& fs) {
  std::string s;
  for (const Finding& f : fs) s += std::string(severityName(f.severity)) + ": " + f.what + "\n";
  return s;
}

CcCoverage coverage(int major, int minor, std::vector<int> gpus, inspect::VerdictKind k) {
  CcCoverage c;
  c.major = major;
  c.minor = minor;
  c.gpus = std::move(gpus);
  c.worst = k;
  c.worst_detail = "libtpcomm.so: detail";
  return c;
}

// A healthy machine: the fixture's GPUs, native kernels, NCCL, P2P working, a tuning table.
void healthy(const std::string& topo_name, DoctorFacts* f) {
  f->gpus_visible = true;
  f->driver_api = 13000;
  f->topo = test::topoFixture(topo_name);
  f->built_archs = "75-real,80-real,89-real,90-real,100-real,120";
  f->library_found = true;
  f->binaries.resize(1);
  f->coverage = {coverage(f->topo.gpus[0].cc_major, f->topo.gpus[0].cc_minor, {0, 1},
                          inspect::VerdictKind::kNative)};
  f->kernel_check.assign(f->topo.size(), "");
  std::vector<int> all;
  for (int g = 0; g < f->topo.size(); ++g) all.push_back(g);
  f->have_fabric = topo::classify(f->topo, all, &f->fabric_all) == tpcommSuccess;
  f->nccl_loaded = true;
  f->nccl_version = 22803;
  f->tuning_status = TuningLoad::kLoaded;
  f->tuning_path = "/cache/tuning.json";
  f->preview_options.nccl_available = true;
  f->preview = previewMachine(f->topo, f->preview_options);
}

TEST(DoctorFindings, HealthyNvlinkPairExitsZero) {
  DoctorFacts f;
  healthy("h200_2x_nvlink", &f);
  const std::vector<Finding> fs = findingsFor(f);
  EXPECT_EQ(exitCodeFor(fs), 0) << dump(fs);
  ASSERT_NE(findingWith(fs, "tuning table in use"), nullptr) << dump(fs);
}

TEST(DoctorFindings, NoGpuIsFatal) {
  DoctorFacts f;
  f.no_gpu_reason = "no usable NVIDIA driver";
  f.built_archs = "90-real";
  f.coverage = {coverage(9, 0, {}, inspect::VerdictKind::kNative),
                coverage(12, 0, {}, inspect::VerdictKind::kNoImage)};
  f.nccl_why = "dlopen failed";
  f.preview_hypothetical = true;
  f.preview = previewHypothetical(f.preview_options);
  const std::vector<Finding> fs = findingsFor(f);
  EXPECT_EQ(exitCodeFor(fs), 2) << dump(fs);
  ASSERT_FALSE(fs.empty());
  EXPECT_EQ(fs[0].severity, Severity::kFatal);
  EXPECT_TRUE(test::contains(fs[0].what, "no GPU visible: no usable NVIDIA driver")) << fs[0].what;
  EXPECT_TRUE(test::contains(fs[0].fix, "driver"));
  // Coverage of ccs that are not on this machine is shown, not judged.
  EXPECT_EQ(findingWith(fs, "no kernel image"), nullptr) << dump(fs);
  // The hypothetical host rows cannot run (no host transport yet), but nothing is judged on them.
  EXPECT_EQ(findingWith(fs, "the policy cannot serve"), nullptr) << dump(fs);
}

TEST(DoctorFindings, MissingImageAndPtxJitCostSpeedWithTheCmakeFix) {
  DoctorFacts f;
  healthy("rtx_pro_6000_8x_pcie_2socket", &f);
  f.built_archs = "90-real";
  f.coverage = {coverage(12, 0, {0, 1, 2, 3, 4, 5, 6, 7}, inspect::VerdictKind::kNoImage)};
  std::vector<Finding> fs = findingsFor(f);
  EXPECT_EQ(exitCodeFor(fs), 1);
  const Finding* e = findingWith(fs, "no kernel image");
  ASSERT_NE(e, nullptr) << dump(fs);
  EXPECT_EQ(e->severity, Severity::kError);
  EXPECT_TRUE(test::contains(e->what, "GPUs 0,1,2,3,4,5,6,7 (cc 12.0)")) << e->what;
  EXPECT_TRUE(test::contains(e->fix, "-DTPCOMM_CUDA_ARCHS=\"90-real;120-real\"")) << e->fix;

  f.coverage[0].worst = inspect::VerdictKind::kPtxJit;
  fs = findingsFor(f);
  EXPECT_EQ(exitCodeFor(fs), 1);
  const Finding* w = findingWith(fs, "PTX JIT");
  ASSERT_NE(w, nullptr) << dump(fs);
  EXPECT_EQ(w->severity, Severity::kWarning);
  EXPECT_TRUE(test::contains(w->fix, "-DTPCOMM_CUDA_ARCHS")) << w->fix;
}

TEST(DoctorFindings, DriverKernelCheckFailureIsReportedOnce) {
  DoctorFacts f;
  healthy("h200_2x_nvlink", &f);
  f.kernel_check[1] = "GPU 1 has no tpcomm kernel image";
  std::vector<Finding> fs = findingsFor(f);
  EXPECT_EQ(exitCodeFor(fs), 1);
  EXPECT_NE(findingWith(fs, "driver's kernel check failed"), nullptr) << dump(fs);
  // When the inspector already said "no image" for that GPU, the driver's word adds nothing.
  f.coverage[0].worst = inspect::VerdictKind::kNoImage;
  fs = findingsFor(f);
  EXPECT_EQ(findingWith(fs, "driver's kernel check failed"), nullptr) << dump(fs);
}

TEST(DoctorFindings, BrokenP2pAndNoP2pCostSpeed) {
  DoctorFacts f;
  healthy("h200_2x_nvlink", &f);
  topo::LinkInfo l = f.topo.link(0, 1);
  l.p2p_works = topo::P2pHealth::kBroken;
  f.topo.setLink(0, 1, l);
  topo::classify(f.topo, {0, 1}, &f.fabric_all);
  std::vector<Finding> fs = findingsFor(f);
  EXPECT_EQ(exitCodeFor(fs), 1);
  const Finding* b = findingWith(fs, "GPU 0 - GPU 1");
  ASSERT_NE(b, nullptr) << dump(fs);
  EXPECT_EQ(b->severity, Severity::kError);
  EXPECT_TRUE(test::contains(b->fix, "IOMMU")) << b->fix;
  EXPECT_TRUE(test::contains(b->fix, "--retest-p2p")) << b->fix;
  EXPECT_NE(findingWith(fs, "no working P2P"), nullptr) << dump(fs);

  DoctorFacts g;
  healthy("rtx_4090_4x_no_p2p", &g);
  fs = findingsFor(g);
  EXPECT_EQ(exitCodeFor(fs), 1);
  const Finding* h = findingWith(fs, "no working P2P");
  ASSERT_NE(h, nullptr) << dump(fs);
  EXPECT_EQ(h->severity, Severity::kWarning);
  EXPECT_TRUE(test::contains(h->what, "pinned host memory")) << h->what;
  EXPECT_TRUE(test::contains(h->fix, "GeForce")) << h->fix;
  EXPECT_EQ(findingWith(fs, "the policy cannot serve"), nullptr) << dump(fs);

  // A build without the host transport cannot serve any call there: an error of its own.
  g.preview_options.host_transport = false;
  g.preview = previewMachine(g.topo, g.preview_options);
  fs = findingsFor(g);
  EXPECT_TRUE(test::contains(findingWith(fs, "no working P2P")->what, "no host-memory transport"))
      << dump(fs);
  // (how many depends on the default host table: every call the table gives to tpcomm)
  EXPECT_NE(findingWith(fs, "the policy cannot serve"), nullptr) << dump(fs);
}

TEST(DoctorFindings, PcieIsANoteNotAProblem) {
  DoctorFacts f;
  healthy("rtx_pro_6000_8x_pcie_2socket", &f);
  const std::vector<Finding> fs = findingsFor(f);
  EXPECT_EQ(exitCodeFor(fs), 0) << dump(fs);
  const Finding* p = findingWith(fs, "P2P over PCIe");
  ASSERT_NE(p, nullptr) << dump(fs);
  EXPECT_EQ(p->severity, Severity::kNote);
}

TEST(DoctorFindings, NcclEnvironmentAndTuningTable) {
  DoctorFacts f;
  healthy("h200_2x_nvlink", &f);
  f.nccl_loaded = false;
  f.nccl_why = "dlopen(libnccl.so.2) failed";
  std::vector<Finding> fs = findingsFor(f);
  EXPECT_EQ(exitCodeFor(fs), 1);
  const Finding* n = findingWith(fs, "NCCL not found");
  ASSERT_NE(n, nullptr) << dump(fs);
  EXPECT_TRUE(test::contains(n->fix, "TPCOMM_NCCL_LIBRARY")) << n->fix;

  f.nccl_off = true;  // the user turned it off: a note
  fs = findingsFor(f);
  EXPECT_EQ(exitCodeFor(fs), 0) << dump(fs);

  f.env_errors = {"TPCOMM_ALGO=fastest: not an algorithm name"};
  fs = findingsFor(f);
  EXPECT_EQ(exitCodeFor(fs), 1);
  EXPECT_NE(findingWith(fs, "TPCOMM_ALGO=fastest"), nullptr) << dump(fs);

  f.env_errors.clear();
  f.tuning_status = TuningLoad::kRejected;
  f.tuning_why = "topology_key: not this machine's";
  fs = findingsFor(f);
  EXPECT_EQ(exitCodeFor(fs), 1);
  const Finding* t = findingWith(fs, "ignored");
  ASSERT_NE(t, nullptr) << dump(fs);
  EXPECT_TRUE(test::contains(t->fix, "tpcomm tune")) << t->fix;

  f.tuning_status = TuningLoad::kMissing;
  fs = findingsFor(f);
  EXPECT_EQ(exitCodeFor(fs), 0) << dump(fs);
  EXPECT_NE(findingWith(fs, "no tuning table"), nullptr) << dump(fs);
}

TEST(DoctorFindings, LibraryNotesAndSingleGpu) {
  DoctorFacts f;
  healthy("h200_2x_nvlink", &f);
  f.library_found = false;
  std::vector<Finding> fs = findingsFor(f);
  EXPECT_EQ(exitCodeFor(fs), 0) << dump(fs);
  EXPECT_NE(findingWith(fs, "libtpcomm.so not found"), nullptr) << dump(fs);
  f.binary_notes = {"cannot inspect /nope/libtpcomm.so (TPCOMM_LIBRARY): cannot open"};
  fs = findingsFor(f);
  EXPECT_EQ(exitCodeFor(fs), 1);

  DoctorFacts one;
  healthy("h200_2x_nvlink", &one);
  one.topo.resize(1);
  one.topo.gpus[0].uuid = "GPU-1";
  one.have_fabric = false;
  one.preview = previewHypothetical(one.preview_options);
  one.preview_hypothetical = true;
  fs = findingsFor(one);
  EXPECT_NE(findingWith(fs, "one GPU"), nullptr) << dump(fs);
}

std::string inspectFixture(const std::string& name) {
  return std::string(TPCOMM_INSPECT_FIXTURE_DIR) + "/" + name;
}

TEST(DoctorCoverage, WorstVerdictOverTheBinaries) {
  std::vector<BinaryInfo> bins(2);
  bins[0].role = "tpcomm executable";
  bins[1].role = "libtpcomm.so";
  ASSERT_TRUE(inspect::inspectFile(inspectFixture("sm80.o"), &bins[0].report));
  ASSERT_TRUE(inspect::inspectFile(inspectFixture("ptx80.o"), &bins[1].report));
  const std::vector<CcCoverage> c = coverageFor(bins, ccsOfGpus({{8, 0}, {8, 6}, {8, 0}, {9, 0}}));
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].major, 8);
  EXPECT_EQ(c[0].minor, 0);
  EXPECT_EQ(c[0].gpus, (std::vector<int>{0, 2}));
  EXPECT_EQ(c[0].per_binary[0].kind, inspect::VerdictKind::kNative);
  EXPECT_EQ(c[0].per_binary[1].kind, inspect::VerdictKind::kPtxJit);
  EXPECT_EQ(c[0].worst, inspect::VerdictKind::kPtxJit);
  EXPECT_TRUE(test::contains(c[0].worst_detail, "libtpcomm.so: ")) << c[0].worst_detail;
  EXPECT_EQ(c[1].gpus, (std::vector<int>{1}));
  EXPECT_EQ(c[2].worst, inspect::VerdictKind::kNoImage);  // 9.0: no sm_80 cubin runs there
  EXPECT_TRUE(test::contains(c[2].worst_detail, "tpcomm executable: ")) << c[2].worst_detail;
  EXPECT_EQ(verdictRank(inspect::VerdictKind::kNoDeviceCode), 0);
  EXPECT_LT(verdictRank(inspect::VerdictKind::kNative), verdictRank(inspect::VerdictKind::kPtxJit));
}

TEST(DoctorCoverage, LibraryCandidatesAndArchFix) {
  const std::vector<std::string> c = libraryCandidates("/opt/tpcomm/bin/tpcomm");
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0], "/opt/tpcomm/bin/libtpcomm.so");
  EXPECT_EQ(c[1], "/opt/tpcomm/bin/../lib/libtpcomm.so");
  EXPECT_EQ(c[3], "/opt/tpcomm/bin/../src/libtpcomm.so");
  EXPECT_EQ(libraryCandidates("tpcomm")[0], "./libtpcomm.so");
  EXPECT_EQ(archsFix("75-real,90-real,120", 12, 1),
            "-DTPCOMM_CUDA_ARCHS=\"75-real;90-real;120;121-real\"");
  EXPECT_EQ(archsFix("", 9, 0), "-DTPCOMM_CUDA_ARCHS=\"90-real\"");
}

TEST(DoctorFacts, VersionTextAndPlainErrors) {
  EXPECT_EQ(cudaVersionText(13000), "13.0");
  EXPECT_EQ(cudaVersionText(12080), "12.8");
  EXPECT_EQ(cudaVersionText(0), "none");
  EXPECT_EQ(ncclVersionText(22803), "2.28.3");
  EXPECT_EQ(ncclVersionText(2804), "2.8.4");
  EXPECT_EQ(plainError("tpcommNoDevice: topology discovery: no GPU at /src/topo/discover.cc:22"),
            "topology discovery: no GPU");
  EXPECT_EQ(plainError("plain words: kept as they are"), "plain words: kept as they are");
}

}  // namespace
}  // namespace tpcomm::cli
