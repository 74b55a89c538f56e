// `tpcomm doctor --json`: the same facts and findings as the text report, for scripts and bug
// reports. Top-level keys are listed in docs/DOCTOR.md; "tpcomm_doctor" is the format version.
#include <cstdlib>

#include "common/env.h"
#include "inspect/report.h"
#include "plan/knobs.h"
#include "tools/doctor/doctor_render.h"
#include "topo/topology_json.h"

namespace tpcomm::cli {
namespace {

using json::Value;

Value str(const std::string& s) {
  return Value::string(s);
}
Value num(int64_t i) {
  return Value::integer(i);
}

Value intList(const std::vector<int>& v) {
  Value a = Value::array();
  for (int i : v) a.push(num(i));
  return a;
}

std::string ccText(int major, int minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

Value systemJson(const DoctorFacts& f) {
  Value o = Value::object();
  o.set("cuda_driver_api", str(cudaVersionText(f.driver_api)));
  o.set("cuda_driver_api_code", num(f.driver_api));
  o.set("driver_version", str(f.topo.driver_version));
  const char* ordering[] = {"off", "on", "unknown"};
  o.set("pcie_relaxed_ordering", str(ordering[static_cast<int>(f.pcie_ordering.state)]));
  o.set("host_fence_auto", Value::boolean(hostFenceOn(kHostFenceAuto, f.pcie_ordering)));
  o.set("pcie_ordering_why", str(f.pcie_ordering.why));
  o.set("cuda_runtime", str(cudaVersionText(f.runtime)));
  o.set("cuda_runtime_code", num(f.runtime));
  return o;
}

Value gpusJson(const DoctorFacts& f) {
  Value a = Value::array();
  for (int g = 0; g < f.topo.size(); ++g) {
    const topo::GpuInfo& i = f.topo.gpus[g];
    Value o = Value::object();
    o.set("index", num(g));
    o.set("name", str(i.name));
    o.set("cc", str(ccText(i.cc_major, i.cc_minor)));
    o.set("pci_bus_id", str(i.pci_bus_id));
    o.set("numa_node", num(i.numa_node));
    o.set("uuid", str(i.uuid));
    // null: not run (simulated); "": every kernel has an image; else the driver's message.
    o.set("kernel_check",
          g < static_cast<int>(f.kernel_check.size()) ? str(f.kernel_check[g]) : Value());
    a.push(std::move(o));
  }
  return a;
}

Value coverageJson(const DoctorFacts& f) {
  Value o = Value::object();
  o.set("built_architectures", str(f.built_archs));
  Value bins = Value::array();
  std::vector<inspect::FileReport> reports;
  for (const BinaryInfo& b : f.binaries) {
    Value x = Value::object();
    x.set("role", str(b.role));
    x.set("how", str(b.how));
    x.set("path", str(b.report.path));
    bins.push(std::move(x));
    reports.push_back(b.report);
  }
  o.set("binaries", std::move(bins));
  Value notes = Value::array();
  for (const std::string& n : f.binary_notes) notes.push(str(n));
  o.set("notes", std::move(notes));
  Value ccs = Value::array();
  inspect::CcList cc_list;
  for (const CcCoverage& c : f.coverage) {
    cc_list.emplace_back(c.major, c.minor);
    Value x = Value::object();
    x.set("cc", str(ccText(c.major, c.minor)));
    x.set("gpus", intList(c.gpus));
    x.set("verdict", str(inspect::verdictName(c.worst)));
    x.set("detail", str(c.worst_detail));
    Value per = Value::array();
    for (size_t i = 0; i < c.per_binary.size() && i < f.binaries.size(); ++i) {
      Value p = Value::object();
      p.set("role", str(f.binaries[i].role));
      p.set("verdict", str(inspect::verdictName(c.per_binary[i].kind)));
      p.set("detail", str(c.per_binary[i].detail));
      per.push(std::move(p));
    }
    x.set("per_binary", std::move(per));
    ccs.push(std::move(x));
  }
  o.set("ccs", std::move(ccs));
  // The inspector's full listing (every container and image), as `tpcomm inspect --json`.
  o.set("inspect", inspect::jsonValue(reports, cc_list));
  return o;
}

Value fabricJson(const DoctorFacts& f) {
  if (!f.have_fabric) return Value();
  Value o = Value::object();
  o.set("fabric", str(fabricName(f.fabric_all.fabric)));
  o.set("reason", str(f.fabric_all.reason));
  o.set("worst_path", str(topo::pathClassName(f.fabric_all.worst_path)));
  o.set("two_islands", Value::boolean(f.fabric_all.two_islands));
  return o;
}

Value tuningJson(const DoctorFacts& f) {
  Value o = Value::object();
  const char* status = f.tuning_status == TuningLoad::kLoaded     ? "loaded"
                       : f.tuning_status == TuningLoad::kRejected ? "rejected"
                                                                  : "missing";
  o.set("status", str(status));
  o.set("path", str(f.tuning_path));
  o.set("why", str(f.tuning_status == TuningLoad::kLoaded ? "" : f.tuning_why));
  if (f.tuning_status == TuningLoad::kLoaded) {
    o.set("fabric", str(fabricName(f.tuning.fabric)));
    Value worlds = Value::array();
    for (const WorldTable& w : f.tuning.tables) worlds.push(num(w.world));
    o.set("worlds", std::move(worlds));
  }
  return o;
}

Value previewJson(const DoctorFacts& f) {
  Value o = Value::object();
  o.set("hypothetical", Value::boolean(f.preview_hypothetical));
  const PreviewOptions& p = f.preview_options;
  Value opts = Value::object();
  opts.set("nccl_available", Value::boolean(p.nccl_available));
  opts.set("host_transport", Value::boolean(p.host_transport));
  opts.set("forced_algo", p.forced_algo > 0 ? str(tpcommAlgoName(p.forced_algo)) : Value());
  opts.set("strict", Value::boolean(p.strict));
  opts.set("tuned", Value::boolean(p.tuning != nullptr));
  opts.set("fabric_verdict", str(fabricVerdictName(p.fabric_verdict)));
  o.set("options", std::move(opts));
  Value worlds = Value::array();
  for (const PreviewWorld& w : f.preview) {
    Value x = Value::object();
    x.set("world", num(w.world));
    x.set("gpus", intList(w.gpus));
    x.set("fabric", str(fabricName(w.fabric)));
    x.set("fabric_reason", str(w.fabric_reason));
    x.set("two_islands", Value::boolean(w.two_islands));
    x.set("table", str(w.table));
    x.set("tuned", Value::boolean(w.tuned));
    x.set("error", str(w.error));
    Value rows = Value::array();
    for (const PreviewRow& r : w.rows) {
      Value row = Value::object();
      row.set("bytes", Value::unsignedInteger(r.bytes));
      const bool ok = r.decision.error == tpcommSuccess;
      row.set("algo", ok ? str(tpcommAlgoName(r.decision.algo)) : Value());
      row.set("variant", ok ? str(tpcommVariantName(r.variant)) : Value());
      row.set("fallback", Value::boolean(r.decision.fallback));
      row.set("error", ok ? Value() : str(tpcommGetErrorString(r.decision.error)));
      row.set("reason", str(r.decision.reason));
      rows.push(std::move(row));
    }
    x.set("rows", std::move(rows));
    Value fused = Value::array();
    for (const PreviewFused& r : w.fused) {
      Value row = Value::object();
      const bool ok = r.error == tpcommSuccess;
      row.set("tokens", Value::unsignedInteger(r.tokens));
      row.set("hidden", Value::unsignedInteger(kPreviewHidden));
      row.set("dtype", str("bf16"));
      row.set("allreduce", ok ? str(tpcommVariantName(r.allreduce)) : Value());
      row.set("variant", ok ? str(tpcommVariantName(r.variant)) : Value());
      row.set("error", ok ? Value() : str(tpcommGetErrorString(r.error)));
      row.set("reason", str(r.reason));
      fused.push(std::move(row));
    }
    x.set("fused", std::move(fused));
    worlds.push(std::move(x));
  }
  o.set("worlds", std::move(worlds));
  return o;
}

Value ncclJson(const DoctorFacts& f) {
  Value o = Value::object();
  o.set("loaded", Value::boolean(f.nccl_loaded));
  o.set("version", f.nccl_loaded ? str(ncclVersionText(f.nccl_version)) : Value());
  o.set("version_code", num(f.nccl_version));
  o.set("why", str(f.nccl_why));
  o.set("off", Value::boolean(f.nccl_off));
  return o;
}

Value envSetJson(const DoctorFacts& f, bool all) {
  Value o = Value::object();
  Value set = Value::array();
  for (const EnvSetting& e : f.env_set) {
    Value x = Value::object();
    x.set("name", str(e.name));
    x.set("value", str(e.value));
    x.set("default", str(e.default_value));
    x.set("meaning", str(e.meaning));
    set.push(std::move(x));
  }
  o.set("set", std::move(set));
  Value errors = Value::array();
  for (const std::string& e : f.env_errors) errors.push(str(e));
  o.set("errors", std::move(errors));
  if (all) o.set("all", envJson());
  return o;
}

}  // namespace

json::Value doctorJson(const DoctorFacts& f, const std::vector<Finding>& findings, bool env_all) {
  const int code = exitCodeFor(findings);
  Value root = Value::object();
  root.set("tpcomm_doctor", num(1));
  root.set("tpcomm_version", num(f.tpcomm_version));
  root.set("exit_code", num(code));
  root.set("status", str(code == 0 ? "ok" : code == 1 ? "degraded" : "no_gpu"));
  root.set("system", systemJson(f));
  root.set("gpus_visible", Value::boolean(f.gpus_visible));
  root.set("no_gpu_reason", str(f.no_gpu_reason));
  root.set("simulated_from", str(f.simulated_from));
  root.set("gpus", gpusJson(f));
  root.set("topology_key", f.topo.size() > 0 ? str(f.topo.key()) : Value());
  root.set("topology", f.topo.size() > 0 ? topo::topologyToJson(f.topo) : Value());
  Value p2p = Value::object();
  p2p.set("checked", Value::boolean(f.p2p_checked));
  p2p.set("retested", Value::boolean(f.p2p_retested));
  p2p.set("cache_path", str(f.p2p_cache_path));
  root.set("p2p", std::move(p2p));
  root.set("fabric", fabricJson(f));
  root.set("fabric_probe", probeJson(f));
  root.set("coverage", coverageJson(f));
  root.set("tuning", tuningJson(f));
  root.set("policy", previewJson(f));
  root.set("nccl", ncclJson(f));
  root.set("env", envSetJson(f, env_all));
  Value fs = Value::array();
  for (const Finding& x : findings) {
    Value o = Value::object();
    o.set("severity", str(severityName(x.severity)));
    o.set("what", str(x.what));
    o.set("fix", str(x.fix));
    fs.push(std::move(o));
  }
  root.set("findings", std::move(fs));
  return root;
}

json::Value envJson() {
  Value a = Value::array();
  auto add = [&a](const char* name, const char* def, const char* meaning) {
    Value o = Value::object();
    o.set("name", str(name));
    o.set("default", str(def));
    const char* v = getenv(name);
    o.set("value", v ? str(v) : Value());
    o.set("meaning", str(meaning));
    a.push(std::move(o));
  };
  for (const EnvVarDoc& d : envDocs()) add(d.name, d.default_value, d.meaning);
  add(kLibraryEnvVar, "", kLibraryEnvMeaning);
  return a;
}

}  // namespace tpcomm::cli
