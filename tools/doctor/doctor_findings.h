// `tpcomm doctor`'s verdict: from the facts, what keeps tpcomm from running at full speed (or at
// all) on this machine, each with the fix, and the exit code. Pure and header-only: the CPU tests
// judge hand-made facts (fixtures) without a GPU.
//
// Exit code: 0 nothing wrong; 1 something costs speed (no kernel image, PTX JIT only, broken
// P2P, no P2P at all, NCCL missing, a bad TPCOMM_* value, an ignored tuning table); 2 tpcomm cannot
// run at all here (no driver or no GPU visible).
#pragma once

#include <string>
#include <vector>

#include "tools/doctor/doctor_facts.h"

namespace tpcomm::cli {

enum class Severity {
  kNote,     // worth knowing, costs nothing (exit 0)
  kWarning,  // runs, but slower than it could (exit 1)
  kError,    // a part of tpcomm cannot run here (exit 1)
  kFatal,    // tpcomm cannot run here at all (exit 2)
};

inline const char* severityName(Severity s) {
  switch (s) {
    case Severity::kNote:
      return "note";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
    case Severity::kFatal:
      return "fatal";
  }
  return "?";
}

struct Finding {
  Severity severity = Severity::kNote;
  std::string what;
  std::string fix;  // "" when there is nothing to do
};

inline int exitCodeFor(const std::vector<Finding>& findings) {
  int code = 0;
  for (const Finding& f : findings) {
    const int c = f.severity == Severity::kFatal ? 2 : f.severity == Severity::kNote ? 0 : 1;
    code = c > code ? c : code;
  }
  return code;
}

inline std::string gpuList(const std::vector<int>& gpus) {
  std::string s = gpus.size() == 1 ? "GPU " : "GPUs ";
  for (size_t i = 0; i < gpus.size(); ++i) s += (i ? "," : "") + std::to_string(gpus[i]);
  return s;
}

inline void coverageFindings(const DoctorFacts& f, std::vector<Finding>* out) {
  for (const CcCoverage& c : f.coverage) {
    if (c.gpus.empty()) continue;  // no such GPU here: the table shows it, nothing to fix
    const std::string cc = std::to_string(c.major) + "." + std::to_string(c.minor);
    const std::string who = gpuList(c.gpus) + " (cc " + cc + ")";
    const std::string fix = "rebuild with " + archsFix(f.built_archs, c.major, c.minor) +
                            " (or the default fat build), then check with `tpcomm inspect --cc " +
                            cc + " libtpcomm.so`";
    switch (c.worst) {
      case inspect::VerdictKind::kNoImage:
        out->push_back({Severity::kError,
                        who + ": no kernel image in this build (" + c.worst_detail +
                            "): communicator init fails with tpcommNoKernelImage",
                        fix});
        break;
      case inspect::VerdictKind::kPtxJit:
        out->push_back({Severity::kWarning,
                        who + ": kernels run only through PTX JIT (" + c.worst_detail +
                            "): the first launch compiles them, no architecture-specific code",
                        fix});
        break;
      case inspect::VerdictKind::kUnknown:
        out->push_back(
            {Severity::kWarning,
             who + ": the inspector cannot tell whether the kernels run (" + c.worst_detail + ")",
             "rebuild tpcomm or check the file; `tpcomm inspect --cc " + cc +
                 "` says which image is unreadable"});
        break;
      case inspect::VerdictKind::kNoDeviceCode:
        if (!f.binaries.empty())
          out->push_back({Severity::kError,
                          who + ": the inspected binaries carry no tpcomm kernels at all",
                          "rebuild tpcomm; `tpcomm inspect` lists what a file carries"});
        break;
      case inspect::VerdictKind::kNative:
        break;
    }
  }
  for (size_t g = 0; g < f.kernel_check.size(); ++g) {
    if (f.kernel_check[g].empty()) continue;
    bool known = false;  // the inspector already reported this GPU's cc
    for (const CcCoverage& c : f.coverage)
      for (int cg : c.gpus)
        known = known || (cg == static_cast<int>(g) && c.worst == inspect::VerdictKind::kNoImage);
    if (!known)
      out->push_back(
          {Severity::kError,
           "GPU " + std::to_string(g) + ": the driver's kernel check failed: " + f.kernel_check[g],
           "rebuild for this GPU (see the message) or report it with `tpcomm doctor "
           "--json`"});
  }
  for (const std::string& n : f.binary_notes)
    out->push_back({Severity::kWarning, n,
                    "point TPCOMM_LIBRARY at the libtpcomm.so your engine loads, or unset it"});
  if (!f.library_found && f.binary_notes.empty())
    out->push_back({Severity::kNote,
                    "libtpcomm.so not found next to this executable: checked the kernels this "
                    "executable carries (the same sources, linked statically)",
                    "set TPCOMM_LIBRARY=/path/to/libtpcomm.so to check the library your engine "
                    "loads"});
}

inline void linkFindings(const DoctorFacts& f, std::vector<Finding>* out) {
  const topo::Topology& t = f.topo;
  const std::string retest =
      f.simulated_from.empty() ? "; re-check with `tpcomm doctor --retest-p2p`" : "";
  for (int a = 0; a < t.size(); ++a)
    for (int b = a + 1; b < t.size(); ++b) {
      const topo::LinkInfo& l = t.link(a, b);
      const std::string pair = "GPU " + std::to_string(a) + " - GPU " + std::to_string(b);
      if (l.p2p_works == topo::P2pHealth::kBroken)
        out->push_back({Severity::kError,
                        pair + ": the driver reports P2P, but data did not arrive intact or in "
                               "time: tpcomm will not use peer memory between them",
                        "usually the IOMMU or PCIe ACS redirecting peer traffic: boot with "
                        "iommu=pt (or disable the IOMMU), disable ACS on the PCIe switches, or "
                        "enable P2P in the hypervisor" +
                            retest});
      else if (l.p2p_supported && l.p2p_works == topo::P2pHealth::kUnknown && f.p2p_checked)
        out->push_back({Severity::kNote,
                        pair + ": P2P is supported but its test could not run; communicator "
                               "init will test it",
                        ""});
    }
  if (!f.have_fabric) return;
  const topo::Classification& c = f.fabric_all;
  if (c.fabric == Fabric::kHost) {
    std::string what = "no working P2P between all GPUs (" + c.reason +
                       "): tpcomm goes through pinned host memory, every byte crosses PCIe twice";
    if (!f.preview_options.host_transport)
      what +=
          "; this build has no host-memory transport yet, so such calls fall back to NCCL "
          "or fail";
    out->push_back({Severity::kWarning, what,
                    "expected on GeForce cards (the driver disables P2P); on servers check the "
                    "IOMMU / ACS settings and that the GPUs share a PCIe switch or socket"});
  } else if (c.fabric == Fabric::kPcie) {
    out->push_back({Severity::kNote,
                    "P2P over PCIe, not NVLink (" + c.reason +
                        "): tpcomm uses its PCIe algorithms; `tpcomm tune` measures where "
                        "they beat NCCL",
                    ""});
  }
}

// The fabric probe's verdict, with what tpcomm does about it. Only a write collapse costs speed
// (exit 1): tpcomm then pulls, which the published boxes show is still far below a healthy push.
inline void probeFindings(const DoctorFacts& f, std::vector<Finding>* out) {
  if (f.probe_source == topo::ProbeSource::kNone) {
    if (f.gpus_visible && f.simulated_from.empty() && !f.probe_why.empty())
      out->push_back({Severity::kNote, "fabric probe: " + f.probe_why, ""});
    return;
  }
  const topo::FabricFinding& p = f.probe_finding;
  const std::string src = std::string(" (") + topo::probeSourceName(f.probe_source) +
                          (f.probe.sameGpu() ? "; every pair is one GPU's memory" : "") + ")";
  const std::string what =
      "fabric probe" + src + ": " + fabricVerdictName(p.verdict) + ": " + p.what + "; " + p.action;
  const bool steers = f.have_fabric && f.fabric_all.fabric == Fabric::kPcie;
  if (p.verdict == FabricVerdict::kWriteCollapse && steers) {
    out->push_back({Severity::kWarning, what,
                    "nothing to set: tpcomm already avoids SM pushes here; `tpcomm tune` measures "
                    "the pull variants against NCCL on this box (PCIe switch firmware or ACS "
                    "settings are where the collapse itself comes from)"});
  } else if (p.verdict == FabricVerdict::kUnknown &&
             (!f.probe.error.empty() || f.probe.sameGpu())) {
    out->push_back({Severity::kNote, what, "`tpcomm doctor --reprobe` measures again"});
  } else {
    out->push_back(
        {Severity::kNote,
         what + (steers || !f.have_fabric ? "" : " (the verdict steers PCIe boxes only)"), ""});
  }
  if (f.env_fabric_probe_off)
    out->push_back({Severity::kNote,
                    "TPCOMM_FABRIC_PROBE=off: communicators ignore the verdict (push defaults)",
                    ""});
}

inline void setupFindings(const DoctorFacts& f, std::vector<Finding>* out) {
  if (f.nccl_off) {
    out->push_back({Severity::kNote, "TPCOMM_NCCL=off: no NCCL fallback", ""});
  } else if (!f.nccl_loaded) {
    out->push_back({Severity::kWarning,
                    "NCCL not found (" + f.nccl_why +
                        "): sizes where NCCL is faster get tpcomm's bandwidth algorithm instead, "
                        "and `tpcomm tune` cannot compare against NCCL",
                    "install NCCL (libnccl2 / nvidia-nccl-cu13) or set "
                    "TPCOMM_NCCL_LIBRARY=/path/to/libnccl.so.2"});
  }
  for (const std::string& e : f.env_errors)
    out->push_back({Severity::kError, e + ": communicator init fails (tpcommInvalidArgument)",
                    "fix or unset the variable (`tpcomm doctor --env` lists them all)"});
  switch (f.tuning_status) {
    case TuningLoad::kLoaded:
      out->push_back({Severity::kNote, "tuning table in use: " + f.tuning_path, ""});
      break;
    case TuningLoad::kRejected:
      out->push_back({Severity::kWarning,
                      "tuning table " + f.tuning_path + " ignored: " + f.tuning_why +
                          "; the built-in defaults are used",
                      "run `tpcomm tune` again (or remove the file)"});
      break;
    case TuningLoad::kMissing:
      if (f.gpus_visible && f.topo.size() >= 2)
        out->push_back({Severity::kNote,
                        "no tuning table" +
                            (f.tuning_path.empty() ? std::string() : " at " + f.tuning_path) +
                            ": the built-in defaults are used",
                        "run `tpcomm tune` to measure this machine"});
      break;
  }
  if (f.preview_options.forced_algo > 0)
    out->push_back({Severity::kNote,
                    std::string("TPCOMM_ALGO=") + tpcommAlgoName(f.preview_options.forced_algo) +
                        " forces every call",
                    ""});
  std::string first;
  const int failures = previewFailures(f.preview, &first);
  if (failures > 0 && !f.preview_hypothetical)
    out->push_back({Severity::kError,
                    "the policy cannot serve " + std::to_string(failures) +
                        " of the previewed calls (" + first + ")",
                    "see the policy preview; TPCOMM_ALGO, TPCOMM_STRICT or TPCOMM_TRANSPORT may "
                    "ask for something this machine cannot do"});
}

inline std::vector<Finding> findingsFor(const DoctorFacts& f) {
  std::vector<Finding> out;
  if (!f.gpus_visible && f.simulated_from.empty()) {
    out.push_back({Severity::kFatal, "no GPU visible: " + f.no_gpu_reason,
                   "install the NVIDIA driver (nvidia-smi must list the GPUs) and check "
                   "CUDA_VISIBLE_DEVICES; what needs no GPU is still shown above"});
  } else if (f.topo.size() == 1) {
    out.push_back({Severity::kNote,
                   "one GPU: an all-reduce needs at least two; the policy preview is "
                   "hypothetical",
                   ""});
  }
  coverageFindings(f, &out);
  linkFindings(f, &out);
  probeFindings(f, &out);
  setupFindings(f, &out);
  return out;
}

}  // namespace tpcomm::cli
