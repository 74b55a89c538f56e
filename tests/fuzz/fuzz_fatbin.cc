// libFuzzer target: the bytes of one .nv_fatbin section (parseFatbinSection: containers, entry
// headers, the cubins inside), then the verdict for every known compute capability.
#include "inspect/fatbin.h"
#include "inspect/inspect.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace inspect = tpcomm::inspect;
  inspect::FileReport report;
  std::string error;
  if (!inspect::parseFatbinSection(".nv_fatbin", data, size, &report.containers, &error))
    report.errors.push_back(error);
  for (const inspect::FatbinContainer& c : report.containers)
    for (const inspect::FatbinEntry& e : c.entries) inspect::targetName(e);
  for (const auto& cc : inspect::knownCcs()) inspect::verdictFor(report, cc.first, cc.second);
  return 0;
}
