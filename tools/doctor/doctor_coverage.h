// `tpcomm doctor`'s architecture coverage: which binaries carry the kernels that will run here
// (this executable, which links the same kernels statically, and libtpcomm.so when it is found),
// and, for each compute capability, whether they run natively, only by PTX JIT, or not at all.
// Pure and header-only (the inspector does the reading), so the CPU tests cover it.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "inspect/inspect.h"

namespace tpcomm::cli {

struct BinaryInfo {
  std::string role;  // "tpcomm executable" or "libtpcomm.so"
  std::string how;   // how it was found: "/proc/self/exe", "TPCOMM_LIBRARY", "next to ..."
  inspect::FileReport report;
};

struct CcCoverage {
  int major = 0, minor = 0;
  std::vector<int> gpus;  // this machine's GPUs of that cc; empty when none (no GPU visible)
  inspect::VerdictKind worst = inspect::VerdictKind::kNoDeviceCode;
  std::string worst_detail;
  std::vector<inspect::Verdict> per_binary;  // in the order of the binaries
};

// Where libtpcomm.so may be, relative to the executable at exe_path: next to it (a bundle),
// ../lib and ../lib64 (an install prefix), ../src (the CMake build tree). In that order.
inline std::vector<std::string> libraryCandidates(const std::string& exe_path) {
  const size_t slash = exe_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : exe_path.substr(0, slash);
  return {dir + "/libtpcomm.so", dir + "/../lib/libtpcomm.so", dir + "/../lib64/libtpcomm.so",
          dir + "/../src/libtpcomm.so"};
}

// How bad a verdict is, for picking the worst over several binaries: a file with no device code
// cannot fail, a PTX-only kernel runs slower to start, an unknown one cannot be vouched for, a
// missing image does not run.
inline int verdictRank(inspect::VerdictKind k) {
  switch (k) {
    case inspect::VerdictKind::kNoDeviceCode:
      return 0;
    case inspect::VerdictKind::kNative:
      return 1;
    case inspect::VerdictKind::kPtxJit:
      return 2;
    case inspect::VerdictKind::kUnknown:
      return 3;
    case inspect::VerdictKind::kNoImage:
      return 4;
  }
  return 4;
}

// One entry per cc, in the order given; each (major, minor) carries the GPUs that have it.
inline std::vector<CcCoverage> coverageFor(
    const std::vector<BinaryInfo>& binaries,
    const std::vector<std::pair<std::pair<int, int>, std::vector<int>>>& ccs) {
  std::vector<CcCoverage> out;
  for (const auto& [cc, gpus] : ccs) {
    CcCoverage c;
    c.major = cc.first;
    c.minor = cc.second;
    c.gpus = gpus;
    for (const BinaryInfo& b : binaries) {
      inspect::Verdict v = inspect::verdictFor(b.report, cc.first, cc.second);
      if (c.per_binary.empty() || verdictRank(v.kind) > verdictRank(c.worst)) {
        c.worst = v.kind;
        c.worst_detail = b.role + ": " + v.detail;
      }
      c.per_binary.push_back(std::move(v));
    }
    out.push_back(std::move(c));
  }
  return out;
}

// The GPUs' compute capabilities, each once with its GPU indices, in order of first GPU.
inline std::vector<std::pair<std::pair<int, int>, std::vector<int>>> ccsOfGpus(
    const std::vector<std::pair<int, int>>& gpu_ccs) {
  std::vector<std::pair<std::pair<int, int>, std::vector<int>>> out;
  for (size_t g = 0; g < gpu_ccs.size(); ++g) {
    auto it =
        std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == gpu_ccs[g]; });
    if (it == out.end())
      out.push_back({gpu_ccs[g], {static_cast<int>(g)}});
    else
      it->second.push_back(static_cast<int>(g));
  }
  return out;
}

// The -DTPCOMM_CUDA_ARCHS value that adds native code for cc major.minor to a build of `built`
// ("75-real,80-real,...,120", as builtArchitectures() gives it).
inline std::string archsFix(const std::string& built, int major, int minor) {
  std::string list;
  for (char ch : built) list += ch == ',' ? ';' : ch;
  const std::string want = std::to_string(major) + std::to_string(minor) + "-real";
  return "-DTPCOMM_CUDA_ARCHS=\"" + (list.empty() ? want : list + ";" + want) + "\"";
}

}  // namespace tpcomm::cli
