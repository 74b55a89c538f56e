// `tpcomm doctor` with a fabric probe (synthetic, shaped like the published fabrics): the finding
// names the verdict and what tpcomm does, a collapse on PCIe costs speed (exit 1), the preview
// takes the verdict, and the JSON carries the probe so that it round-trips.
#include <gtest/gtest.h>

#include <string>

#include "common/json.h"
#include "support/synthetic_fabrics.h"
#include "tests/cpu/support/topo_fixture.h"
#include "tools/doctor/doctor_findings.h"
#include "tools/doctor/doctor_render.h"
#include "topo/fabric_probe_json.h"

namespace tpcomm::cli {
namespace {

// The 8x RTX PRO 6000 PCIe fixture with a probe of its GPUs, judged as doctor does.
void pcieBoxProbed(const topo::FabricProbe& probe, DoctorFacts* f) {
  f->gpus_visible = true;
  f->driver_api = 13000;
  f->topo = test::topoFixture("rtx_pro_6000_8x_pcie_2socket");
  f->kernel_check.assign(f->topo.size(), "");
  std::vector<int> all;
  for (int g = 0; g < f->topo.size(); ++g) all.push_back(g);
  f->have_fabric = topo::classify(f->topo, all, &f->fabric_all) == tpcommSuccess;
  f->nccl_loaded = true;
  f->probe = probe;
  f->probe_source = topo::ProbeSource::kCache;
  f->probe_finding = topo::judgeFabric(probe, true);
  f->policy_verdict = f->probe_finding.verdict;
  f->preview_options.nccl_available = true;
  f->preview_options.fabric_verdict = f->policy_verdict;
  f->preview = previewMachine(f->topo, f->preview_options);
}

TEST(DoctorProbe, ACollapseIsAWarningThatSaysWhatTpcommDoes) {
  DoctorFacts f;
  pcieBoxProbed(topo::syntheticFabric(37, 27, 56, 2.7, 27), &f);
  ASSERT_EQ(f.fabric_all.fabric, Fabric::kPcie);
  const std::vector<Finding> fs = findingsFor(f);
  const Finding* c = nullptr;
  for (const Finding& x : fs)
    if (test::contains(x.what, "write_collapse")) c = &x;
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->severity, Severity::kWarning);
  EXPECT_TRUE(test::contains(c->what, "oneshot_pull")) << c->what;
  EXPECT_EQ(exitCodeFor(fs), 1);
  // The preview's reasons name the verdict; no SM push is previewed at any size or world.
  for (const PreviewWorld& w : f.preview)
    for (const PreviewRow& r : w.rows) {
      EXPECT_NE(r.decision.algo, tpcommAlgoOneShot) << r.decision.reason;
      EXPECT_NE(r.decision.algo, tpcommAlgoTwoShot) << r.decision.reason;
      EXPECT_NE(r.decision.algo, tpcommAlgoIsland) << r.decision.reason;
      EXPECT_TRUE(test::contains(r.decision.reason, "write_collapse")) << r.decision.reason;
    }
  const std::string text = doctorText(f, fs);
  EXPECT_TRUE(test::contains(text, "Fabric probe (cached")) << text;
  const size_t all = text.find("all pairs at once, per GPU");
  ASSERT_NE(all, std::string::npos) << text;
  EXPECT_TRUE(test::contains(text.substr(all, text.find('\n', all) - all), " 2.7 ")) << text;
  EXPECT_TRUE(test::contains(text, "fabric probe verdict write_collapse")) << text;
}

TEST(DoctorProbe, AHealthySwitchIsANoteAndPushes) {
  DoctorFacts f;
  pcieBoxProbed(topo::syntheticFabric(54, 45, 56, 39, 35), &f);
  const std::vector<Finding> fs = findingsFor(f);
  bool note = false;
  for (const Finding& x : fs)
    note = note || (x.severity == Severity::kNote && test::contains(x.what, "push_fine"));
  EXPECT_TRUE(note);
  EXPECT_EQ(f.preview.back().rows.front().decision.algo, tpcommAlgoOneShot);
}

TEST(DoctorProbe, JsonCarriesTheProbeAndItRoundTrips) {
  DoctorFacts f;
  topo::FabricProbe p = topo::syntheticFabric(37, 27, 56, 2.7, 27);
  p.topology_key = "8gpu-0123456789abcdef";
  p.fabric_hash = "0011223344556677";
  pcieBoxProbed(p, &f);
  const std::string text = json::write(doctorJson(f, findingsFor(f), false));
  json::Value root;
  std::string why;
  ASSERT_TRUE(json::parse(text, &root, &why)) << why;
  const json::Value* probe = root.find("fabric_probe");
  ASSERT_NE(probe, nullptr);
  ASSERT_NE(probe->find("verdict"), nullptr);
  EXPECT_EQ(probe->find("verdict")->asString(), "write_collapse");
  EXPECT_EQ(probe->find("policy_verdict")->asString(), "write_collapse");
  topo::FabricProbe back;
  ASSERT_TRUE(topo::fabricProbeFromJson(*probe->find("probe"), &back, &why)) << why;
  EXPECT_EQ(json::write(topo::fabricProbeToJson(back)), json::write(topo::fabricProbeToJson(p)));
  const json::Value* opts = root.find("policy")->find("options");
  EXPECT_EQ(opts->find("fabric_verdict")->asString(), "write_collapse");
}

}  // namespace
}  // namespace tpcomm::cli
