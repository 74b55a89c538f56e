// Fills DoctorFacts from the live machine. Every step degrades on its own: no driver still gives
// the build's coverage, no NCCL still gives the topology, and so on.
#include "tools/doctor/doctor_facts.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdlib>

#include "comm/lifecycle/config.h"
#include "comm/lifecycle/probe_view.h"
#include "common/env.h"
#include "common/error.h"
#include "kernels/runtime/fabric_probe_run.h"
#include "kernels/runtime/image_check.h"
#include "topo/cache_dir.h"
#include "topo/discover.h"
#include "topo/p2p_cache.h"
#include "topo/probe/fabric_probe_json.h"
#include "topo/topology_json.h"
#include "transport/nccl_loader.h"

namespace tpcomm::cli {
namespace {

// Whether this library has the host shared-memory transport (set up by a communicator that needs
// it: the planner's needsHostTransport). The one switch for the preview, should a build
// lack it.
bool hostTransportAvailable() {
  return true;
}

std::string selfExePath() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "/proc/self/exe";
  buf[n] = '\0';
  return buf;
}

bool readable(const std::string& path) {
  return access(path.c_str(), R_OK) == 0;
}

void collectBinaries(DoctorFacts* f) {
  const std::string exe = selfExePath();
  BinaryInfo self;
  self.role = "tpcomm executable";
  self.how = "/proc/self/exe";
  if (inspect::inspectFile(exe, &self.report)) {
    f->binaries.push_back(std::move(self));
  } else {
    f->binary_notes.push_back("cannot inspect this executable (" + exe +
                              "): " + self.report.errors.front());
  }
  BinaryInfo lib;
  lib.role = "libtpcomm.so";
  std::string path;
  if (const char* env_path = getenv(kLibraryEnvVar); env_path && *env_path) {
    path = env_path;
    lib.how = kLibraryEnvVar;
  } else {
    for (const std::string& c : libraryCandidates(exe))
      if (readable(c)) {
        path = c;
        lib.how = "found next to the executable";
        break;
      }
  }
  if (path.empty()) return;
  char real[4096];
  const std::string resolved = realpath(path.c_str(), real) ? real : path;
  if (inspect::inspectFile(resolved, &lib.report)) {
    f->library_found = true;
    f->binaries.push_back(std::move(lib));
  } else {
    f->binary_notes.push_back("cannot inspect " + path + " (" + lib.how +
                              "): " + lib.report.errors.front());
  }
}

// The fabric probe of probeGpus(), from the cache when current.
void collectProbe(const DoctorOptions& o, DoctorFacts* f) {
  if (o.no_probe) {
    f->probe_why = "not run (--no-probe)";
    return;
  }
  bool p2p = true;
  const std::vector<int> gpus = probeGpus(f->topo, &p2p);
  topo::FabricProbeOptions po;
  po.reprobe = o.reprobe;
  po.prober = topo::runFabricProbe;
  f->probe_cache_path = topo::fabricProbeCachePath(f->topo);
  f->probe_source = topo::obtainFabricProbe(f->topo, gpus, po, &f->probe, &f->probe_why);
  if (f->probe_source != topo::ProbeSource::kNone)
    f->probe_finding = topo::judgeFabric(f->probe, p2p);
}

// --probe FILE: a fabric probe in the cache's format (topo/probe/fabric_probe_json.h) in place of
// measuring, judged as a measured one: with --topology, a whole machine simulated on the CPU.
void loadProbeFile(const DoctorOptions& o, DoctorFacts* f) {
  std::string text, why;
  json::Value v;
  if (!topo::readTextFile(o.probe_file, &text, &why) || !json::parse(text, &v, &why) ||
      !topo::fabricProbeFromJson(v, &f->probe, &why)) {
    f->probe_file_error = "--probe " + o.probe_file + ": " + why;
    return;
  }
  bool p2p = true;
  probeGpus(f->topo, &p2p);
  f->probe_source = topo::ProbeSource::kFile;
  f->probe_cache_path = o.probe_file;
  f->probe_finding = topo::judgeFabric(f->probe, p2p);
}

void collectGpus(const DoctorOptions& o, DoctorFacts* f) {
  if (!o.topology_file.empty()) {
    f->simulated_from = o.topology_file;
    if (topo::loadTopologyFile(o.topology_file, &f->topo) != tpcommSuccess) {
      f->no_gpu_reason = plainError(lastError());
      f->simulated_from.clear();
      f->topo = topo::Topology();
      return;
    }
    f->gpus_visible = f->topo.size() > 0;
    if (!o.probe_file.empty()) loadProbeFile(o, f);
    return;
  }
  if (topo::discover(&f->topo) != tpcommSuccess) {
    f->no_gpu_reason = plainError(lastError());
    return;
  }
  f->gpus_visible = true;
  std::vector<int> all;
  for (int g = 0; g < f->topo.size(); ++g) all.push_back(g);
  if (all.size() >= 2) {
    topo::P2pCheckOptions p2p;
    p2p.retest = o.retest_p2p;
    f->p2p_retested = o.retest_p2p;
    f->p2p_cache_path = topo::p2pCachePath(f->topo);
    f->p2p_checked = topo::checkP2pHealth(&f->topo, all, p2p) == tpcommSuccess;
  }
  if (o.probe_file.empty())
    collectProbe(o, f);
  else
    loadProbeFile(o, f);
  // The driver's own answer (cudaFuncGetAttributes on every kernel), next to the inspector's.
  for (int g = 0; g < f->topo.size(); ++g)
    f->kernel_check.push_back(checkKernelImages(g) == tpcommSuccess ? "" : plainError(lastError()));
}

void collectCoverage(DoctorFacts* f) {
  f->built_archs = builtArchitectures();
  collectBinaries(f);
  std::vector<std::pair<std::pair<int, int>, std::vector<int>>> ccs;
  if (f->topo.size() > 0) {
    std::vector<std::pair<int, int>> gpu_ccs;
    for (const topo::GpuInfo& g : f->topo.gpus) gpu_ccs.emplace_back(g.cc_major, g.cc_minor);
    ccs = ccsOfGpus(gpu_ccs);
  } else {
    for (const auto& cc : inspect::knownCcs()) ccs.push_back({cc, {}});
  }
  f->coverage = coverageFor(f->binaries, ccs);
}

void collectSetup(DoctorFacts* f) {
  std::string why;
  if (const NcclApi* nccl = ncclApi(&why)) {
    f->nccl_loaded = true;
    nccl->getVersion(&f->nccl_version);
  } else {
    f->nccl_why = why;
  }
  const Env& e = env();
  f->nccl_off = e.nccl_mode == tpcommNcclOff;
  for (const EnvVarDoc& d : envDocs())
    if (const char* v = getenv(d.name))
      f->env_set.push_back({d.name, v, d.default_value, d.meaning});
  if (const char* v = getenv(kLibraryEnvVar))
    f->env_set.push_back({kLibraryEnvVar, v, "", kLibraryEnvMeaning});
  f->env_errors = e.errors;
  // TPCOMM_KNOBS is read as a string and parsed by init: run init's parser and range checks.
  LaunchKnobs knobs;
  if (const std::string why = applyLaunchKnobs(e.knobs, &knobs); !why.empty())
    f->env_errors.push_back("TPCOMM_KNOBS=" + e.knobs + ": " + why);

  if (f->topo.size() > 0) {
    f->tuning_path = defaultTuningPath(f->topo.key());
    f->tuning_status = loadTuningTable(f->tuning_path, f->topo.key(), &f->tuning, &f->tuning_why);
  }
  PreviewOptions& p = f->preview_options;
  p.nccl_available = f->nccl_loaded && !f->nccl_off;
  p.host_transport = hostTransportAvailable();
  p.transport = e.transport;
  p.forced_algo = e.algo;
  p.strict = e.strict != 0;
  p.tuning = f->tuning_status == TuningLoad::kLoaded ? &f->tuning : nullptr;
  // The verdict as init would use it (comm/lifecycle/probe_view.h), TPCOMM_FABRIC_PROBE=off
  // included.
  f->env_fabric_probe_off = e.fabric_probe == 2;
  if (f->have_fabric && !f->env_fabric_probe_off)
    f->policy_verdict =
        policyVerdict(f->fabric_all.fabric,
                      f->probe_source != topo::ProbeSource::kNone ? &f->probe_finding : nullptr);
  p.fabric_verdict = f->policy_verdict;
}

}  // namespace

void collectFacts(const DoctorOptions& o, DoctorFacts* f) {
  tpcommGetVersion(&f->tpcomm_version);
  if (cudaDriverGetVersion(&f->driver_api) != cudaSuccess) f->driver_api = 0;
  if (cudaRuntimeGetVersion(&f->runtime) != cudaSuccess) f->runtime = 0;
  cudaGetLastError();
  if (f->driver_api != 0) f->pcie_ordering = topo::readRelaxedOrdering();
  collectGpus(o, f);
  collectCoverage(f);
  if (f->topo.size() >= 2) {
    std::vector<int> all;
    for (int g = 0; g < f->topo.size(); ++g) all.push_back(g);
    f->have_fabric = topo::classify(f->topo, all, &f->fabric_all) == tpcommSuccess;
  }
  collectSetup(f);
  f->preview_hypothetical = f->topo.size() < 2;
  f->preview = f->preview_hypothetical ? previewHypothetical(f->preview_options)
                                       : previewMachine(f->topo, f->preview_options);
}

}  // namespace tpcomm::cli
