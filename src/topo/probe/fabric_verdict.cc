#include "topo/probe/fabric_verdict.h"

namespace tpcomm {
namespace {

struct VerdictName {
  FabricVerdict verdict;
  const char* name;
};
// Fixed here: the probe cache and `tpcomm doctor --json` carry these names.
const VerdictName kNames[] = {{FabricVerdict::kUnknown, "unknown"},
                              {FabricVerdict::kPushFine, "push_fine"},
                              {FabricVerdict::kWriteCollapse, "write_collapse"},
                              {FabricVerdict::kNoP2p, "no_p2p"}};

}  // namespace

const char* fabricVerdictName(FabricVerdict v) {
  for (const VerdictName& n : kNames)
    if (n.verdict == v) return n.name;
  return "?";
}

bool parseFabricVerdict(const std::string& name, FabricVerdict* out) {
  for (const VerdictName& n : kNames)
    if (name == n.name) {
      *out = n.verdict;
      return true;
    }
  return false;
}

}  // namespace tpcomm
