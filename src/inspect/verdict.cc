#include "inspect/verdict.h"

#include <cstdio>
#include <set>

#include "inspect/inspect.h"

namespace tpcomm::inspect {

namespace {

std::string ccName(int major, int minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// Whether a container holds kernels. All its images are one translation unit (or one device
// link) compiled for different targets, so any image that was read tells for all of them.
// Unread LTO IR and unknown kinds are presumed to hold kernels (they cannot be loaded anyway);
// when nothing could be read and a cubin or PTX is unread or corrupt, it is not known. Checked
// on an H200 (cc 9.0): a program whose kernel-free container has only sm_80 SASS loads and
// launches its PTX-JIT kernels with CUDA_MODULE_LOADING=EAGER and LAZY alike.
enum class Holds { kKernels, kNone, kUnknown };

Holds holdsKernels(const FatbinContainer& c, const FatbinEntry** unread) {
  bool read = false, kernels = false, presumed = false;
  *unread = nullptr;
  for (const FatbinEntry& e : c.entries) {
    if (e.contents == ImageContents::kRead) {
      read = true;
      kernels |= e.kernels > 0;
    } else if (e.kind == ImageKind::kCubin || e.kind == ImageKind::kPtx) {
      if (!*unread) *unread = &e;
    } else {
      presumed = true;
    }
  }
  if (read) return kernels ? Holds::kKernels : Holds::kNone;
  if (presumed) return Holds::kKernels;
  return *unread ? Holds::kUnknown : Holds::kNone;  // kNone: a container without images
}

// Ranking among images that all run: the newest SM first (what the driver picks: the closest
// cubin, which ptxas tuned for the most similar hardware), then a over f over plain at equal SM.
bool better(const FatbinEntry& a, const FatbinEntry* b) {
  if (!b) return true;
  if (a.sm != b->sm) return a.sm > b->sm;
  return static_cast<int>(a.variant) > static_cast<int>(b->variant);
}

struct Choice {
  const FatbinEntry* cubin = nullptr;  // best native cubin, if any
  const FatbinEntry* ptx = nullptr;    // best PTX to JIT, if any
};

Choice choose(const FatbinContainer& c, int major, int minor) {
  Choice ch;
  for (const FatbinEntry& e : c.entries) {
    const Compat k = entryCompat(e, major, minor);
    if (k == Compat::kNative && better(e, ch.cubin)) ch.cubin = &e;
    if (k == Compat::kJit && better(e, ch.ptx)) ch.ptx = &e;
  }
  return ch;
}

std::string at(const FatbinEntry& e, const FatbinContainer& c) {
  char buf[32];
  snprintf(buf, sizeof(buf), "+0x%llx", static_cast<unsigned long long>(e.offset));
  return targetName(e) + " " + kindName(e.kind) + " at " + c.section + buf;
}

std::string describeImages(const FatbinContainer& c) {
  std::string s;
  for (const FatbinEntry& e : c.entries) {
    if (!s.empty()) s += ", ";
    s += targetName(e) + " " + kindName(e.kind);
  }
  return s.empty() ? "no images" : s;
}

std::string joinNames(const std::set<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : " + ") + n;
  return s;
}

// Names the failing container a reader can act on: one known to hold kernels if there is one
// (a kernel-free stub that merely cannot be ruled out is a poor example), numbered as the report
// numbers containers.
std::string noImageDetail(const FileReport& report, size_t used,
                          const std::vector<const FatbinContainer*>& failed,
                          const std::string& cc) {
  auto known_kernels = [](const FatbinContainer* c) {
    for (const FatbinEntry& e : c->entries)
      if (e.kernels > 0) return true;
    return false;
  };
  const FatbinContainer* shown = failed.front();
  for (const FatbinContainer* c : failed)
    if (known_kernels(c)) {
      shown = c;
      break;
    }
  std::string d = "no image for " + cc + ": ";
  if (used > 1)
    d += "container " + std::to_string(shown - report.containers.data() + 1) + " (" +
         shown->section + ") has ";
  d += "only " + describeImages(*shown);
  bool lto_only = true;
  for (const FatbinEntry& e : shown->entries) lto_only &= e.kind == ImageKind::kLtoIr;
  if (lto_only) d += " (LTO IR runs only after a device link with -dlto)";
  if (failed.size() > 1)
    d += "; " + std::to_string(failed.size()) + " of " + std::to_string(used) +
         " containers have no image";
  return d;
}

}  // namespace

Compat entryCompat(const FatbinEntry& e, int cc_major, int cc_minor) {
  const int major = e.sm / 10, minor = e.sm % 10;
  const bool same_major = major == cc_major;
  const bool exact = same_major && minor == cc_minor;
  const bool family = same_major && minor <= cc_minor;
  switch (e.kind) {
    case ImageKind::kCubin:
      // Binary compatibility never crosses a major version; `a` cubins not even a minor one.
      if (e.variant == ArchVariant::kArchSpecific) return exact ? Compat::kNative : Compat::kNone;
      return family ? Compat::kNative : Compat::kNone;
    case ImageKind::kPtx:
      if (e.variant == ArchVariant::kArchSpecific) return exact ? Compat::kJit : Compat::kNone;
      if (e.variant == ArchVariant::kFamilySpecific) return family ? Compat::kJit : Compat::kNone;
      return (major < cc_major || family) ? Compat::kJit : Compat::kNone;
    default:
      return Compat::kNone;  // LTO IR needs nvlink; unknown kinds are not loadable images
  }
}

const char* verdictName(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kNative:
      return "native";
    case VerdictKind::kPtxJit:
      return "ptx-jit";
    case VerdictKind::kNoImage:
      return "no-image";
    case VerdictKind::kUnknown:
      return "unknown";
    default:
      return "no-device-code";
  }
}

namespace {

// What the containers of `section` say for one device: those that hold kernels (used), those
// of them with no image the device loads (failed), the first that cannot be decided and why
// (unknown), and the cubins and PTX the driver would load.
struct Survey {
  std::vector<const FatbinContainer*> used, failed;
  std::string unknown;
  bool any = false;  // the section has a container at all
  std::set<std::string> cubins, ptxs;
  size_t jit_containers = 0;
};

Survey survey(const FileReport& report, const char* section, int cc_major, int cc_minor) {
  Survey s;
  for (const FatbinContainer& c : report.containers) {
    if (c.section != section) continue;
    s.any = true;
    const FatbinEntry* unread = nullptr;
    const Holds holds = holdsKernels(c, &unread);
    if (holds == Holds::kNone) continue;
    s.used.push_back(&c);
    const Choice ch = choose(c, cc_major, cc_minor);
    // The image the driver would load must itself have been read and be sound, or nothing can
    // be said: one never opened (past the decompression budget, an unknown codec) may be junk.
    const FatbinEntry* pick = ch.cubin ? ch.cubin : ch.ptx;
    if (pick && pick->contents == ImageContents::kCorrupt) {
      if (s.unknown.empty())
        s.unknown = "the " + at(*pick, c) + " it would load is " + pick->problem;
    } else if (pick && pick->contents == ImageContents::kNotOpened) {
      if (s.unknown.empty())
        s.unknown = "the " + at(*pick, c) + " it would load could not be checked: " + pick->problem;
    } else if (ch.cubin) {
      s.cubins.insert(targetName(*ch.cubin));
    } else if (ch.ptx) {
      s.ptxs.insert(targetName(*ch.ptx));
      ++s.jit_containers;
    } else if (holds == Holds::kKernels) {
      s.failed.push_back(&c);
    } else if (s.unknown.empty()) {
      s.unknown = "container " + std::to_string(&c - report.containers.data() + 1) + " (" +
                  c.section + ") has only " + describeImages(c) +
                  ", and whether it holds kernels is not known: " + at(*unread, c) + ": " +
                  unread->problem;
    }
  }
  return s;
}

}  // namespace

Verdict verdictFor(const FileReport& report, int cc_major, int cc_minor) {
  const std::string cc = ccName(cc_major, cc_minor);
  Verdict v;
  if (!report.errors.empty()) {  // what was not read could be exactly the missing kernel
    v.kind = VerdictKind::kUnknown;
    v.detail = "unknown: the file could not be read completely";
    return v;
  }
  // The driver loads .nv_fatbin; __nv_relfatbin only feeds a later device link, so it decides
  // only for relocatable objects that have nothing else.
  bool has_loadable = false;
  for (const FatbinContainer& c : report.containers)
    if (c.section == ".nv_fatbin") has_loadable = true;
  const char* section = has_loadable ? ".nv_fatbin" : "__nv_relfatbin";

  const Survey s = survey(report, section, cc_major, cc_minor);
  if (!s.failed.empty()) {  // a definite failure outweighs what is unknown elsewhere
    v.kind = VerdictKind::kNoImage;
    v.detail = noImageDetail(report, s.used.size(), s.failed, cc);
    return v;
  }
  if (!s.unknown.empty()) {
    v.kind = VerdictKind::kUnknown;
    v.detail = "unknown for " + cc + ": " + s.unknown;
    return v;
  }
  if (s.used.empty()) {
    v.kind = VerdictKind::kNoDeviceCode;
    v.detail = s.any ? "device code holds no kernels: nothing to run on the GPU"
                     : "no device code: nothing to run on the GPU";
    return v;
  }
  const std::string where = has_loadable ? "" : " (relocatable device code, __nv_relfatbin)";
  if (s.ptxs.empty()) {
    v.kind = VerdictKind::kNative;
    v.detail = joinNames(s.cubins) + (s.cubins.size() > 1 ? " cubins" : " cubin") + where;
    return v;
  }
  v.kind = VerdictKind::kPtxJit;
  v.detail = "PTX " + joinNames(s.ptxs) + " JIT (compiled by the driver at first launch; no " +
             "features beyond " + joinNames(s.ptxs) + ")";
  if (s.jit_containers < s.used.size())
    v.detail += "; " + std::to_string(s.used.size() - s.jit_containers) + " of " +
                std::to_string(s.used.size()) + " containers run " + joinNames(s.cubins) +
                " cubins natively";
  v.detail += where;
  return v;
}

}  // namespace tpcomm::inspect
