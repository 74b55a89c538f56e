// `tpcomm doctor` as aligned tables: system, GPUs, architecture coverage, GPU pairs, policy
// preview, NCCL, environment, then the findings with their fixes.
#include <cctype>
#include <cstdlib>
#include <set>

#include "common/env.h"
#include "plan/knobs.h"
#include "tools/doctor/doctor_render.h"
#include "tools/doctor/doctor_table.h"

namespace tpcomm::cli {
namespace {

std::string yesNo(bool b) {
  return b ? "yes" : "no";
}

std::string ccText(int major, int minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string versionText(int v) {
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." +
         std::to_string(v % 100);
}

// "SASS sm_75 sm_80 ...; PTX compute_120" for one binary.
std::string targetsText(const inspect::FileReport& r) {
  std::set<std::pair<int, std::string>> sass, ptx;
  for (const inspect::FatbinContainer& c : r.containers)
    for (const inspect::FatbinEntry& e : c.entries) {
      if (e.kind == inspect::ImageKind::kCubin) sass.insert({e.sm, inspect::targetName(e)});
      if (e.kind == inspect::ImageKind::kPtx) ptx.insert({e.sm, inspect::targetName(e)});
    }
  auto join = [](const std::set<std::pair<int, std::string>>& s) {
    std::string out;
    for (const auto& n : s) out += (out.empty() ? "" : " ") + n.second;
    return out.empty() ? std::string("none") : out;
  };
  if (sass.empty() && ptx.empty()) return "no device code";
  return "SASS " + join(sass) + "; PTX " + join(ptx);
}

void systemSection(const DoctorFacts& f, std::string* out) {
  *out += "System\n";
  TextTable t(std::vector<std::string>{});
  std::string driver;
  if (f.driver_api == 0) {
    driver = "none (no NVIDIA driver: libcuda.so.1 did not load)";
  } else {
    driver = f.topo.driver_version.empty() ? "" : f.topo.driver_version + ", ";
    driver += "CUDA " + cudaVersionText(f.driver_api) + " driver API";
  }
  t.add({"NVIDIA driver", driver});
  if (f.driver_api != 0)
    t.add({"host-path fence",
           std::string(hostFenceOn(kHostFenceAuto, f.pcie_ordering) ? "on (host_fence auto): "
                                                                    : "off (host_fence auto): ") +
               f.pcie_ordering.why});
  t.add({"CUDA runtime", cudaVersionText(f.runtime) + " (linked statically)"});
  if (f.nccl_loaded)
    t.add({"NCCL", ncclVersionText(f.nccl_version) + (f.nccl_off ? " (TPCOMM_NCCL=off)" : "")});
  else
    t.add({"NCCL", "not found: " + f.nccl_why});
  if (!f.simulated_from.empty()) t.add({"topology", "simulated from " + f.simulated_from});
  if (f.topo.size() > 0)
    t.add({"topology key", f.topo.key() + " (facts from " + f.topo.sources + ")"});
  else
    t.add({"GPUs", "no GPU visible: " + f.no_gpu_reason});
  *out += t.render();
}

void gpuSection(const DoctorFacts& f, std::string* out) {
  if (f.topo.size() == 0) return;
  *out += "\nGPUs\n";
  TextTable t({"GPU", "name", "cc", "PCI bus id", "NUMA", "UUID", "kernel check (driver)"});
  for (int g = 0; g < f.topo.size(); ++g) {
    const topo::GpuInfo& i = f.topo.gpus[g];
    std::string check = "not run (simulated)";
    if (g < static_cast<int>(f.kernel_check.size()))
      check = f.kernel_check[g].empty() ? "every kernel has an image" : "FAILED (see below)";
    t.add({std::to_string(g), i.name, ccText(i.cc_major, i.cc_minor), i.pci_bus_id,
           i.numa_node < 0 ? "-" : std::to_string(i.numa_node), i.uuid, check});
  }
  *out += t.render();
}

void coverageSection(const DoctorFacts& f, std::string* out) {
  *out += "\nArchitecture coverage (this build: TPCOMM_CUDA_ARCHS \"" + f.built_archs + "\")\n";
  for (const BinaryInfo& b : f.binaries)
    *out += "  " + b.role + ": " + b.report.path + " (" + b.how + ")\n    " +
            targetsText(b.report) + "\n";
  for (const std::string& n : f.binary_notes) *out += "  " + n + "\n";
  std::vector<std::string> header = {"cc", "GPUs"};
  for (const BinaryInfo& b : f.binaries) header.push_back(b.role);
  header.push_back("detail (worst)");
  TextTable t(header);
  for (const CcCoverage& c : f.coverage) {
    std::string gpus;
    for (int g : c.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    std::vector<std::string> row = {ccText(c.major, c.minor), gpus.empty() ? "-" : gpus};
    for (const inspect::Verdict& v : c.per_binary) row.push_back(inspect::verdictName(v.kind));
    row.push_back(c.worst_detail);
    t.add(row);
  }
  *out += t.render();
  if (f.topo.size() == 0) *out += "  (no GPU visible: every cc tpcomm knows is shown)\n";
}

void pairSection(const DoctorFacts& f, std::string* out) {
  if (f.topo.size() < 2) return;
  *out += "\nGPU pairs";
  if (!f.simulated_from.empty())
    *out += " (from the topology file)";
  else if (f.p2p_retested)
    *out += " (P2P retested now)";
  else if (!f.p2p_cache_path.empty())
    *out += " (P2P results cached in " + f.p2p_cache_path + ")";
  *out += "\n";
  TextTable t({"pair", "path", "NVLinks", "P2P supported", "P2P works"});
  for (int a = 0; a < f.topo.size(); ++a)
    for (int b = a + 1; b < f.topo.size(); ++b) {
      const topo::LinkInfo& l = f.topo.link(a, b);
      t.add({std::to_string(a) + "-" + std::to_string(b), topo::pathClassName(l.path),
             l.path == topo::PathClass::kNvlink && l.nvlink_count == 0
                 ? "?"
                 : std::to_string(l.nvlink_count),
             yesNo(l.p2p_supported), topo::p2pHealthName(l.p2p_works)});
    }
  *out += t.render();
  if (f.have_fabric)
    *out += "  all GPUs: fabric " + std::string(fabricName(f.fabric_all.fabric)) + ": " +
            f.fabric_all.reason + "\n";
}

std::string cellText(const Decision& d) {
  if (d.error != tpcommSuccess) return "n/a";
  return tpcommAlgoName(d.algo);
}

// One matrix: a row per size, a column per world.
std::string matrix(const std::vector<const PreviewWorld*>& worlds) {
  std::vector<std::string> header = {"bytes"};
  for (const PreviewWorld* w : worlds) header.push_back("world " + std::to_string(w->world));
  TextTable t(header);
  const std::vector<size_t> sizes = previewSizes();
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<std::string> row = {formatBytes(sizes[i])};
    for (const PreviewWorld* w : worlds)
      row.push_back(w->error.empty() ? cellText(w->rows[i].decision) : "n/a");
    t.add(row);
  }
  return t.render();
}

// Per world: the fabric, the table, and the reason for each run of sizes with one outcome.
std::string reasons(const PreviewWorld& w) {
  std::string out = "  world " + std::to_string(w.world) + " (" + gpuList(w.gpus) + "): fabric " +
                    fabricName(w.fabric) + ", " + w.table + "\n";
  if (!w.error.empty()) return out + "    cannot create a communicator: " + w.error + "\n";
  TextTable t({"bytes", "algo", "why"});
  for (size_t i = 0; i < w.rows.size();) {
    size_t j = i;
    while (j + 1 < w.rows.size() && w.rows[j + 1].decision.algo == w.rows[i].decision.algo &&
           w.rows[j + 1].decision.error == w.rows[i].decision.error)
      ++j;
    std::string range = formatBytes(w.rows[i].bytes);
    if (j > i) range += " .. " + formatBytes(w.rows[j].bytes);
    t.add({range, cellText(w.rows[i].decision), w.rows[i].decision.reason});
    i = j + 1;
  }
  out += t.render("    ");
  // The fused call (the engines' fusion passes): the kernel that runs each token count.
  out += "    all-reduce + add + RMSNorm, " + std::to_string(kPreviewHidden) + " bf16 rows:";
  for (const PreviewFused& r : w.fused)
    out += " T=" + std::to_string(r.tokens) + " " +
           (r.error == tpcommSuccess ? tpcommVariantName(r.variant) : "n/a") +
           (&r == &w.fused.back() ? "\n" : ";");
  return out;
}

void previewSection(const DoctorFacts& f, std::string* out) {
  *out += "\nPolicy preview (src/plan/planner.h planCall(); ";
  if (f.preview_hypothetical) {
    *out += "hypothetical: " + std::string(f.topo.size() == 1 ? "one GPU" : "no GPU visible") +
            ", so every fabric at worlds 2..8, built-in defaults)\n";
    for (Fabric fab : {Fabric::kNvlink, Fabric::kPcie, Fabric::kHost}) {
      std::vector<const PreviewWorld*> ws;
      for (const PreviewWorld& w : f.preview)
        if (w.fabric == fab) ws.push_back(&w);
      if (ws.empty()) continue;
      *out += std::string("  ") + fabricName(fab) + ":\n" + matrix(ws);
      for (const PreviewRow& r : ws.front()->rows)
        if (r.decision.error != tpcommSuccess) {
          *out += "  n/a: " + r.decision.reason + "\n";
          break;
        }
    }
    *out += "  (reasons: tpcomm doctor --json)\n";
    return;
  }
  *out += "world N = ranks on GPUs 0..N-1; fabric probe verdict " +
          std::string(fabricVerdictName(f.policy_verdict)) + "; ";
  if (f.tuning_status == TuningLoad::kLoaded)
    *out += "tuning table " + f.tuning_path + ")\n";
  else
    *out += "built-in defaults: no tuning table in use)\n";
  std::vector<const PreviewWorld*> ws;
  for (const PreviewWorld& w : f.preview) ws.push_back(&w);
  *out += matrix(ws);
  for (const PreviewWorld& w : f.preview) *out += reasons(w);
}

void envSection(const DoctorFacts& f, std::string* out) {
  *out += "\nEnvironment\n";
  if (f.env_set.empty()) {
    *out += "  no TPCOMM_* variable is set (tpcomm doctor --env lists them)\n";
    return;
  }
  TextTable t({"variable", "value", "default", "meaning"});
  for (const EnvSetting& e : f.env_set) t.add({e.name, e.value, e.default_value, e.meaning});
  *out += t.render();
}

void findingSection(const std::vector<Finding>& findings, int code, std::string* out) {
  *out += "\nFindings\n";
  if (findings.empty()) *out += "  none\n";
  for (const Finding& x : findings) {
    std::string tag = severityName(x.severity);
    for (char& c : tag) c = x.severity == Severity::kNote ? c : static_cast<char>(toupper(c));
    *out += "  [" + tag + "] " + x.what + "\n";
    if (!x.fix.empty()) *out += "      fix: " + x.fix + "\n";
  }
  *out += "\nResult: ";
  if (code == 0)
    *out += "OK (exit 0): nothing keeps tpcomm from full speed here\n";
  else if (code == 1)
    *out += "DEGRADED (exit 1): see the warnings and errors above\n";
  else
    *out += "CANNOT RUN (exit 2): no GPU visible\n";
}

}  // namespace

std::string doctorText(const DoctorFacts& f, const std::vector<Finding>& findings) {
  std::string out = "tpcomm doctor (tpcomm " + versionText(f.tpcomm_version) + ")\n\n";
  systemSection(f, &out);
  gpuSection(f, &out);
  coverageSection(f, &out);
  pairSection(f, &out);
  probeSection(f, &out);
  previewSection(f, &out);
  envSection(f, &out);
  findingSection(findings, exitCodeFor(findings), &out);
  return out;
}

std::string envText() {
  TextTable t({"variable", "default", "value here", "meaning"});
  for (const EnvVarDoc& d : envDocs()) {
    const char* v = getenv(d.name);
    t.add({d.name, *d.default_value ? d.default_value : "(none)", v ? v : "-", d.meaning});
  }
  const char* lib = getenv(kLibraryEnvVar);
  t.add({kLibraryEnvVar, "(none)", lib ? lib : "-", kLibraryEnvMeaning});
  return "TPCOMM_* environment variables (read once per process)\n" + t.render();
}

}  // namespace tpcomm::cli
