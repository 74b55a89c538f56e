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
#include "topo/probe/fabric_probe_json.h"

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

// One H200 (the 2x fixture cut to its first GPU), probed as two buffers on it, judged as doctor
// does: a machine of one GPU has no fabric, so the policy takes no verdict from it.
void oneGpuProbed(const topo::FabricProbe& probe, DoctorFacts* f) {
  f->gpus_visible = true;
  f->driver_api = 13000;
  f->topo = test::topoFixture("h200_2x_nvlink");
  f->topo.resize(1);
  f->topo.gpus[0].uuid = "GPU-1";
  f->kernel_check.assign(1, "");
  f->nccl_loaded = true;
  f->probe = probe;
  f->probe.gpus = {0, 0};
  f->probe.topology_key = f->topo.key();
  f->probe.fabric_hash = "0011223344556677";
  f->probe_source = topo::ProbeSource::kMeasured;
  f->probe_cache_path = "/cache/probe-1gpu.json";
  f->probe_finding = topo::judgeFabric(f->probe, true);
  f->preview_options.nccl_available = true;
  f->preview = previewHypothetical(f->preview_options);
  f->preview_hypothetical = true;
}

const Finding* probeFinding(const std::vector<Finding>& fs) {
  for (const Finding& x : fs)
    if (x.what.rfind("fabric probe", 0) == 0) return &x;
  return nullptr;
}

TEST(DoctorProbe, OneGpuProbesTwoBuffersOnIt) {
  bool p2p = false;
  EXPECT_EQ(probeGpus(test::topoFixture("h200_2x_nvlink"), &p2p), (std::vector<int>{0, 1}));
  EXPECT_TRUE(p2p);
  topo::Topology one = test::topoFixture("h200_2x_nvlink");
  one.resize(1);
  EXPECT_EQ(probeGpus(one, &p2p), (std::vector<int>{0, 0}));
  EXPECT_TRUE(p2p);
  EXPECT_EQ(probeGpus(test::topoFixture("rtx_4090_4x_no_p2p"), &p2p), (std::vector<int>{0}));
  EXPECT_FALSE(p2p);
  EXPECT_EQ(probeGpus(test::topoFixture("h200_8x_nvswitch"), &p2p).size(), 8u);
}

TEST(DoctorProbe, OneGpuHealthyIsPushFineForRanksSharingIt) {
  DoctorFacts f;
  oneGpuProbed(topo::syntheticOneGpu(2900, 3100, 1800, 1500, 1600), &f);
  const std::vector<Finding> fs = findingsFor(f);
  const Finding* c = probeFinding(fs);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->severity, Severity::kNote);
  EXPECT_TRUE(test::contains(c->what, "push_fine: one GPU: two buffers on it")) << c->what;
  EXPECT_TRUE(test::contains(c->what, "ranks sharing this GPU push")) << c->what;
  const std::string text = doctorText(f, fs);
  EXPECT_TRUE(test::contains(text, "Fabric probe (measured, 210 ms; two buffers on one GPU"))
      << text;
  EXPECT_TRUE(test::contains(text, "GPU 0 -> GPU 0 (another buffer)")) << text;
  const size_t both = text.find("both buffers at once, per buffer");
  ASSERT_NE(both, std::string::npos) << text;
  EXPECT_TRUE(test::contains(text.substr(both, text.find('\n', both) - both), " 1500.0 ")) << text;
  EXPECT_TRUE(test::contains(text,
                             "verdict: push_fine: one GPU: two buffers on it, memory and "
                             "launches, not a link"))
      << text;

  json::Value root;
  std::string why;
  ASSERT_TRUE(json::parse(json::write(doctorJson(f, fs, false)), &root, &why)) << why;
  const json::Value* probe = root.find("fabric_probe");
  ASSERT_NE(probe, nullptr);
  EXPECT_EQ(probe->find("verdict")->asString(), "push_fine");
  EXPECT_EQ(probe->find("what")->asString().rfind("one GPU: two buffers on it", 0), 0u);
  EXPECT_EQ(probe->find("policy_verdict")->asString(), "unknown");  // no fabric to steer
  topo::FabricProbe back;
  ASSERT_TRUE(topo::fabricProbeFromJson(*probe->find("probe"), &back, &why)) << why;
  EXPECT_EQ(json::write(topo::fabricProbeToJson(back)),
            json::write(topo::fabricProbeToJson(f.probe)));
  EXPECT_TRUE(back.sameGpu());
}

TEST(DoctorProbe, OneGpuWithoutNumbersOrWithFallingStoresSaysSo) {
  DoctorFacts f;
  topo::FabricProbe cut = topo::syntheticOneGpu(2900, 3100, 1800, 1500, 1600);
  cut.all_pairs = topo::LinkSpeed{};
  cut.error = "the probe's time budget ran out before SM stores";
  oneGpuProbed(cut, &f);
  std::vector<Finding> fs = findingsFor(f);
  const Finding* c = probeFinding(fs);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->severity, Severity::kNote);
  EXPECT_TRUE(test::contains(c->what, "unknown: one GPU: two buffers on it")) << c->what;
  EXPECT_TRUE(test::contains(c->fix, "--reprobe")) << c->fix;
  EXPECT_TRUE(test::contains(doctorText(f, fs), "cut short: the probe's time budget"));

  DoctorFacts g;
  oneGpuProbed(topo::syntheticOneGpu(2900, 3100, 1800, 300, 1600), &g);
  fs = findingsFor(g);
  c = probeFinding(fs);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->severity, Severity::kNote);
  EXPECT_TRUE(test::contains(c->what, "unknown: one GPU")) << c->what;
  EXPECT_TRUE(test::contains(c->what, "no write collapse")) << c->what;
  EXPECT_TRUE(test::contains(c->fix, "--reprobe")) << c->fix;
  EXPECT_FALSE(test::contains(doctorText(g, fs), "write_collapse"));
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

// The host path's fence (launch knob host_fence, auto): doctor shows what auto chooses on this
// driver and why, in the text and in the JSON.
TEST(DoctorProbe, HostFenceFollowsTheDriversRelaxedOrdering) {
  DoctorFacts f;
  pcieBoxProbed(topo::syntheticOneGpu(2900, 3100, 1800, 1500, 1600), &f);
  f.pcie_ordering = topo::relaxedOrderingFromParams("EnablePCIERelaxedOrderingMode: 1\n");
  const std::vector<Finding> fs = findingsFor(f);
  const std::string text = doctorText(f, fs);
  EXPECT_TRUE(test::contains(text,
                             "host-path fence  on (host_fence auto): the driver sets PCIe "
                             "Relaxed Ordering"))
      << text;
  const json::Value j = doctorJson(f, fs, false);
  const json::Value* sys = j.find("system");
  ASSERT_NE(sys, nullptr);
  EXPECT_EQ(sys->find("pcie_relaxed_ordering")->asString(), "on");
  EXPECT_TRUE(sys->find("host_fence_auto")->asBool());
  f.pcie_ordering = topo::relaxedOrderingFromParams("EnablePCIERelaxedOrderingMode: 0\n");
  EXPECT_TRUE(test::contains(doctorText(f, fs), "host-path fence  off (host_fence auto)"));
}

// tpcomm doctor --html: one page, the findings first (a class per severity, the fix with them),
// then every section of the text report under its heading, all of it escaped.
TEST(DoctorProbe, HtmlReportHasTheFindingsAndEverySection) {
  DoctorFacts f;
  pcieBoxProbed(topo::syntheticOneGpu(2900, 3100, 1800, 1500, 1600), &f);
  f.nccl_why = "libnccl.so.2: <not found>";
  f.nccl_loaded = false;
  const std::vector<Finding> fs = findingsFor(f);
  ASSERT_FALSE(fs.empty());
  const std::string html = doctorHtml(f, fs);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_TRUE(test::contains(html, "</body></html>"));
  for (const Finding& x : fs)
    EXPECT_TRUE(test::contains(html, std::string("class=\"finding ") + severityName(x.severity)))
        << x.what;
  for (const char* section : {"<h2>System</h2>", "<h2>GPUs</h2>", "<h2>Findings</h2>"})
    EXPECT_TRUE(test::contains(html, section)) << section;
  EXPECT_TRUE(test::contains(html, "&lt;not found&gt;"));
  EXPECT_FALSE(test::contains(html, "<not found>"));
  // The text report's own findings section is not repeated.
  EXPECT_EQ(html.find("<h2>Findings</h2>"), html.rfind("<h2>Findings</h2>"));
}

}  // namespace
}  // namespace tpcomm::cli
