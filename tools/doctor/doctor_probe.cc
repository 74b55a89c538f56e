// `tpcomm doctor`'s fabric probe section: the numbers per pair, with all pairs at once and
// against pinned host memory, then the verdict and what tpcomm does about it; text and JSON.
#include "common/str_format.h"
#include "tools/doctor/doctor_render.h"
#include "tools/doctor/doctor_table.h"
#include "topo/probe/fabric_probe_json.h"

namespace tpcomm::cli {
namespace {

std::string gbps(double x) {
  return x < 0 ? "-" : strFormat("%.1f", x);
}

std::string us(double x) {
  return x < 0 ? "-" : strFormat("%.2f", x);
}

std::vector<std::string> row(const std::string& what, const topo::LinkSpeed& s) {
  return {what, gbps(s.store_gbps), gbps(s.load_gbps), gbps(s.copy_gbps), us(s.latency_us)};
}

}  // namespace

void probeSection(const DoctorFacts& f, std::string* out) {
  if (f.probe_source == topo::ProbeSource::kNone) {
    if (f.gpus_visible && f.simulated_from.empty())
      *out += "\nFabric probe\n  " + f.probe_why + "\n";
    return;
  }
  const topo::FabricProbe& p = f.probe;
  *out += "\nFabric probe (" + std::string(topo::probeSourceName(f.probe_source)) +
          (f.probe_source == topo::ProbeSource::kCache || f.probe_source == topo::ProbeSource::kFile
               ? " in " + f.probe_cache_path
               : "") +
          strFormat(", %.0f ms", p.elapsed_ms) +
          (p.sameGpu() ? "; two buffers on one GPU: memory and launches, not a link" : "") + ")\n";
  TextTable t({"traffic", "SM stores GB/s", "SM loads GB/s", "copy engine GB/s", "one-way us"});
  const bool one_gpu = p.sameGpu();
  for (const topo::ProbePair& pair : p.pairs)
    t.add(row("GPU " + std::to_string(pair.a) + " -> GPU " + std::to_string(pair.b) +
                  (one_gpu ? " (another buffer)" : ""),
              pair.speed));
  if (p.gpus.size() >= 2)
    t.add(row(one_gpu ? "both buffers at once, per buffer" : "all pairs at once, per GPU",
              p.all_pairs));
  if (!p.gpus.empty())
    t.add(row("GPU " + std::to_string(p.gpus[0]) + " <-> pinned host memory", p.host));
  *out += t.render();
  if (!p.error.empty()) *out += "  cut short: " + p.error + "\n";
  *out += "  verdict: " + std::string(fabricVerdictName(f.probe_finding.verdict)) + ": " +
          f.probe_finding.what + "\n  tpcomm: " + f.probe_finding.action + "\n";
}

json::Value probeJson(const DoctorFacts& f) {
  json::Value o = json::Value::object();
  o.set("source", json::Value::string(topo::probeSourceName(f.probe_source)));
  o.set("why", json::Value::string(f.probe_why));
  o.set("cache_path", json::Value::string(f.probe_cache_path));
  const bool have = f.probe_source != topo::ProbeSource::kNone;
  o.set("verdict", json::Value::string(fabricVerdictName(have ? f.probe_finding.verdict
                                                              : FabricVerdict::kUnknown)));
  o.set("what", json::Value::string(have ? f.probe_finding.what : ""));
  o.set("action", json::Value::string(have ? f.probe_finding.action : ""));
  o.set("policy_verdict", json::Value::string(fabricVerdictName(f.policy_verdict)));
  o.set("probe", have ? topo::fabricProbeToJson(f.probe) : json::Value());
  return o;
}

}  // namespace tpcomm::cli
