// What `tpcomm doctor` finds out about this machine and this build, as plain data:
// doctor_facts.cc fills it from the live machine, doctor_findings.h judges it, doctor_render.cc
// prints it. The CPU tests build it by hand (from the topology fixtures) to test the judging.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "plan/tuning_table.h"
#include "tools/doctor/doctor_coverage.h"
#include "tools/doctor/doctor_preview.h"
#include "topo/classify.h"
#include "topo/pcie_ordering.h"
#include "topo/probe/fabric_probe.h"
#include "topo/probe/fabric_probe_cache.h"
#include "topo/topology.h"

namespace tpcomm::cli {

// Read by `tpcomm doctor` only, not by the library, so it is not in envDocs().
constexpr const char* kLibraryEnvVar = "TPCOMM_LIBRARY";
constexpr const char* kLibraryEnvMeaning =
    "the libtpcomm.so `tpcomm doctor` inspects (default: next to the executable, then ../lib, "
    "../lib64, ../src)";

struct EnvSetting {
  std::string name, value, default_value, meaning;
};

struct DoctorFacts {
  int tpcomm_version = 0;  // tpcommGetVersion
  int driver_api = 0;      // cudaDriverGetVersion (e.g. 13000); 0: no driver
  int runtime = 0;         // cudaRuntimeGetVersion (linked statically)
  // Whether the driver may set PCIe Relaxed Ordering: decides the host_fence knob's auto.
  topo::PcieOrdering pcie_ordering;

  // GPUs and links. gpus_visible false: no driver or no device (why in no_gpu_reason).
  bool gpus_visible = false;
  std::string no_gpu_reason;
  std::string simulated_from;  // --topology FILE: the facts below come from that file
  topo::Topology topo;
  bool p2p_checked = false;  // checkP2pHealth ran on every pair
  bool p2p_retested = false;
  std::string p2p_cache_path;
  std::vector<std::string> kernel_check;  // per GPU: "" (driver found every kernel) or why not
  bool have_fabric = false;               // at least two GPUs: fabric_all is set
  topo::Classification fabric_all;        // all GPUs together

  // The fabric probe of every GPU (topo/probe/fabric_probe.h): source kNone when it did not run (no
  // GPU, --no-probe, a simulated topology, or it could not start: probe_why).
  topo::ProbeSource probe_source = topo::ProbeSource::kNone;
  std::string probe_why;
  std::string probe_cache_path;  // where the probe was read (the cache, or --probe FILE)
  std::string probe_file_error;  // --probe FILE could not be read or parsed: why (exit 2)
  topo::FabricProbe probe;
  topo::FabricFinding probe_finding;                       // judged when probe_source is not kNone
  FabricVerdict policy_verdict = FabricVerdict::kUnknown;  // what a communicator would use
  bool env_fabric_probe_off = false;                       // TPCOMM_FABRIC_PROBE=off

  // This build.
  std::string built_archs;  // builtArchitectures()
  std::vector<BinaryInfo> binaries;
  std::vector<std::string> binary_notes;  // a library that was asked for but cannot be read, ...
  bool library_found = false;
  std::vector<CcCoverage> coverage;  // per GPU cc, or every known cc without GPU

  // Tuning table for this topology.
  TuningLoad tuning_status = TuningLoad::kMissing;
  std::string tuning_path;
  std::string tuning_why;
  TuningTable tuning;

  // Policy preview.
  PreviewOptions preview_options;  // tuning points into this struct: do not copy facts around
  bool preview_hypothetical = false;
  std::vector<PreviewWorld> preview;

  // NCCL.
  bool nccl_loaded = false;
  int nccl_version = 0;
  std::string nccl_why;
  bool nccl_off = false;  // TPCOMM_NCCL=off

  // Environment.
  std::vector<EnvSetting> env_set;      // TPCOMM_* variables that are set
  std::vector<std::string> env_errors;  // values that make communicator init fail
};

struct DoctorOptions {
  bool retest_p2p = false;
  bool reprobe = false;       // --reprobe: measure the fabric again instead of trusting the cache
  bool no_probe = false;      // --no-probe: no fabric probe (nor its cached result)
  std::string topology_file;  // non-empty: judge this topology dump instead of the live GPUs
  std::string probe_file;     // non-empty: take this fabric probe (the cache's JSON) as measured
};

// The GPUs doctor probes (topology indices): the machine's first eight; with one GPU two buffers
// on it ({0, 0}, as ranks sharing it run: memory and launches, not a link); where P2P does not
// work among them GPU 0 alone (host memory, what a box without P2P uses). *p2p: P2P works (or
// is not needed: one GPU).
inline std::vector<int> probeGpus(const topo::Topology& t, bool* p2p) {
  std::vector<int> gpus;
  for (int g = 0; g < t.size() && g < topo::kProbeMaxGpus; ++g) gpus.push_back(g);
  *p2p = true;
  if (gpus.size() == 1) {
    gpus.push_back(0);
  } else if (gpus.size() >= 2 && topo::fabricFor(t, gpus) == Fabric::kHost) {
    *p2p = false;
    gpus.resize(1);
  }
  return gpus;
}

// Gathers everything; never fails (what cannot be found is recorded as such).
void collectFacts(const DoctorOptions& options, DoctorFacts* facts);

// A library error for people: without the result name in front and the source location behind
// ("tpcommNoDevice: topology discovery: ... at /src/topo/discover.cc:22").
inline std::string plainError(std::string msg) {
  if (msg.compare(0, 6, "tpcomm") == 0) {
    const size_t colon = msg.find(": ");
    if (colon != std::string::npos && msg.find(' ') > colon) msg.erase(0, colon + 2);
  }
  const size_t at = msg.rfind(" at /");
  if (at != std::string::npos && msg.find(' ', at + 4) == std::string::npos) msg.erase(at);
  return msg;
}

// "13.0" from 13000 (major*1000 + minor*10); "none" for 0.
inline std::string cudaVersionText(int v) {
  if (v <= 0) return "none";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// "2.28.3" from NCCL's version code (2.9 and later: major*10000 + minor*100 + patch; before:
// major*1000 + minor*100 + patch).
inline std::string ncclVersionText(int code) {
  if (code <= 0) return "unknown";
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int rest = code >= 10000 ? code % 10000 : code % 1000;
  return std::to_string(major) + "." + std::to_string(rest / 100) + "." +
         std::to_string(rest % 100);
}

}  // namespace tpcomm::cli
