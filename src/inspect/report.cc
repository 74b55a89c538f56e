#include "inspect/report.h"

#include <set>

#include "common/json.h"
#include "common/str_format.h"
#include "inspect/elf_reader.h"

namespace tpcomm::inspect {

namespace {

std::string ccName(const std::pair<int, int>& cc) {
  return std::to_string(cc.first) + "." + std::to_string(cc.second);
}

// Targets of each kind, in the containers the verdicts are drawn from (all of them here: the
// summary is about what the file carries).
struct Targets {
  std::set<std::pair<int, std::string>> native, ptx, lto;  // keyed by SM for a natural order
};

Targets targetsOf(const FileReport& r) {
  Targets t;
  for (const FatbinContainer& c : r.containers)
    for (const FatbinEntry& e : c.entries) {
      auto key = std::make_pair(e.sm, targetName(e));
      if (e.kind == ImageKind::kCubin) t.native.insert(key);
      if (e.kind == ImageKind::kPtx) t.ptx.insert(key);
      if (e.kind == ImageKind::kLtoIr) t.lto.insert(key);
    }
  return t;
}

std::string joined(const std::set<std::pair<int, std::string>>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : " ") + n.second;
  return s.empty() ? "none" : s;
}

json::Value jsonNames(const std::set<std::pair<int, std::string>>& names) {
  json::Value a = json::Value::array();
  for (const auto& n : names) a.push(json::Value::string(n.second));
  return a;
}

const char* contentsName(ImageContents c) {
  switch (c) {
    case ImageContents::kRead:
      return "read";
    case ImageContents::kCorrupt:
      return "corrupt";
    default:
      return "not-opened";
  }
}

// Why an entry's kernel count is '?' (empty when it is known), for the legend under the table.
std::string whyUnknown(const FatbinEntry& e) {
  if (e.contents == ImageContents::kRead) return "";
  if (!e.problem.empty()) return e.problem;
  if (e.kind == ImageKind::kLtoIr) return "LTO IR (NVVM bitcode) is not opened";
  return "an image of unknown kind " + std::to_string(e.raw_kind) + " is not opened";
}

const char* verdictLabel(VerdictKind k) {
  switch (k) {
    case VerdictKind::kNative:
      return "runs natively";
    case VerdictKind::kPtxJit:
      return "runs via JIT";
    case VerdictKind::kNoImage:
      return "CANNOT RUN";
    case VerdictKind::kUnknown:
      return "UNKNOWN";
    default:
      return "nothing to run";
  }
}

json::Value jsonEntry(const FatbinEntry& e) {
  json::Value o = json::Value::object();
  o.set("kind", json::Value::string(kindName(e.kind)));
  o.set("target", json::Value::string(targetName(e)));
  o.set("sm", json::Value::integer(e.sm));
  o.set("variant", json::Value::string(variantSuffix(e.variant)));
  o.set("compressed", json::Value::boolean(e.compressed));
  o.set("stored_size", json::Value::unsignedInteger(e.stored_size));
  o.set("size", json::Value::unsignedInteger(e.size));
  o.set("header_size", json::Value::unsignedInteger(e.header_size));
  o.set("flags", json::Value::unsignedInteger(e.flags));
  o.set("contents", json::Value::string(contentsName(e.contents)));
  o.set("problem", json::Value::string(e.problem));
  o.set("kernels", json::Value::integer(e.kernels));
  json::Value names = json::Value::array();
  for (const std::string& n : e.kernel_names) names.push(json::Value::string(n));
  o.set("kernel_names", std::move(names));
  return o;
}

json::Value jsonFile(const FileReport& r, const CcList& ccs) {
  json::Value f = json::Value::object();
  f.set("path", json::Value::string(r.path));
  f.set("elf_type", json::Value::string(r.elf_type ? elfTypeName(r.elf_type) : ""));
  json::Value errors = json::Value::array();
  for (const std::string& e : r.errors) errors.push(json::Value::string(e));
  f.set("errors", std::move(errors));
  json::Value containers = json::Value::array();
  for (const FatbinContainer& c : r.containers) {
    json::Value jc = json::Value::object();
    jc.set("section", json::Value::string(c.section));
    jc.set("offset", json::Value::unsignedInteger(c.offset));
    jc.set("size", json::Value::unsignedInteger(c.size));
    json::Value entries = json::Value::array();
    for (const FatbinEntry& e : c.entries) entries.push(jsonEntry(e));
    jc.set("entries", std::move(entries));
    containers.push(std::move(jc));
  }
  f.set("containers", std::move(containers));
  const Targets t = targetsOf(r);
  f.set("native", jsonNames(t.native));
  f.set("ptx", jsonNames(t.ptx));
  f.set("lto_ir", jsonNames(t.lto));
  json::Value verdicts = json::Value::array();
  for (const auto& cc : ccs) {
    const Verdict v = verdictFor(r, cc.first, cc.second);
    json::Value jv = json::Value::object();
    jv.set("cc", json::Value::string(ccName(cc)));
    jv.set("verdict", json::Value::string(verdictName(v.kind)));
    jv.set("can_run", json::Value::boolean(v.canRun()));
    jv.set("detail", json::Value::string(v.detail));
    verdicts.push(std::move(jv));
  }
  f.set("verdicts", std::move(verdicts));
  return f;
}

}  // namespace

std::string humanReport(const std::vector<FileReport>& files, const CcList& ccs) {
  std::string s;
  for (const FileReport& r : files) {
    if (r.elf_type == 0) continue;  // nothing was read: the error (stderr) is all there is to say
    if (!s.empty()) s += "\n";
    s +=
        strFormat("%s: %s, %zu fatbin container%s, %zu image%s\n", r.path.c_str(),
                  elfTypeName(r.elf_type), r.containers.size(), r.containers.size() == 1 ? "" : "s",
                  r.entryCount(), r.entryCount() == 1 ? "" : "s");
    if (r.entryCount() > 0)
      s += strFormat("  %-4s %-20s %-7s %-14s %-10s %10s %8s\n", "#", "section+offset", "kind",
                     "target", "compressed", "size", "kernels");
    std::vector<std::string> legend;  // "?" reasons, each once, in order of first use
    for (size_t i = 0; i < r.containers.size(); ++i) {
      const FatbinContainer& c = r.containers[i];
      for (const FatbinEntry& e : c.entries) {
        const std::string at =
            strFormat("%s+0x%llx", c.section.c_str(), static_cast<unsigned long long>(e.offset));
        std::string kernels = std::to_string(e.kernels);
        if (e.kernels < 0) {
          const std::string why = whyUnknown(e);
          size_t n = 0;
          while (n < legend.size() && legend[n] != why) ++n;
          if (n == legend.size()) legend.push_back(why);
          kernels = "?" + std::to_string(n + 1);
        }
        s += strFormat("  %-4zu %-20s %-7s %-14s %-10s %10llu %8s\n", i + 1, at.c_str(),
                       kindName(e.kind), targetName(e).c_str(), e.compressed ? "yes" : "no",
                       static_cast<unsigned long long>(e.size), kernels.c_str());
      }
    }
    for (size_t n = 0; n < legend.size(); ++n)
      s += strFormat("  ?%zu: kernels not known: %s\n", n + 1, legend[n].c_str());
    const Targets t = targetsOf(r);
    s += "  native SASS: " + joined(t.native) + "\n  PTX (JIT):   " + joined(t.ptx) + "\n";
    if (!t.lto.empty()) s += "  LTO IR:      " + joined(t.lto) + " (needs a device link)\n";
    for (const auto& cc : ccs) {
      const Verdict v = verdictFor(r, cc.first, cc.second);
      s += strFormat("  cc %-5s %-15s %s\n", ccName(cc).c_str(), verdictLabel(v.kind),
                     v.detail.c_str());
    }
  }
  return s;
}

json::Value jsonValue(const std::vector<FileReport>& files, const CcList& ccs) {
  json::Value root = json::Value::object();
  json::Value list = json::Value::array();
  for (const FileReport& r : files) list.push(jsonFile(r, ccs));
  root.set("files", std::move(list));
  root.set("all_can_run", json::Value::boolean(allCanRun(files, ccs)));
  return root;
}

std::string jsonReport(const std::vector<FileReport>& files, const CcList& ccs) {
  return json::write(jsonValue(files, ccs));
}

bool allCanRun(const std::vector<FileReport>& files, const CcList& ccs) {
  for (const FileReport& r : files)
    for (const auto& cc : ccs)
      if (!verdictFor(r, cc.first, cc.second).canRun()) return false;
  return true;
}

bool anyCannotRun(const std::vector<FileReport>& files, const CcList& ccs) {
  for (const FileReport& r : files)
    for (const auto& cc : ccs)
      if (verdictFor(r, cc.first, cc.second).kind == VerdictKind::kNoImage) return true;
  return false;
}

}  // namespace tpcomm::inspect
