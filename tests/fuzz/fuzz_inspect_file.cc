// libFuzzer target: the whole inspector on one file, as `tpcomm inspect --cc all-known` runs it
// (ELF reader, every fat binary section, embedded cubins, verdicts, both reports). inspectFile
// reads from a path, so the input goes through a private file.
// Property: the JSON report is valid JSON whatever the file holds.
#include "common/json.h"
#include "inspect/inspect.h"
#include "inspect/report.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace inspect = tpcomm::inspect;
  std::vector<inspect::FileReport> files(1);
  inspect::inspectFile(tpcomm::fuzz::writeInputFile(data, size), &files[0]);
  const inspect::CcList& ccs = inspect::knownCcs();
  inspect::humanReport(files, ccs);
  const std::string text = inspect::jsonReport(files, ccs);
  tpcomm::json::Value v;
  std::string error;
  tpcomm::fuzz::check(tpcomm::json::parse(text, &v, &error), "the JSON report parses",
                      error + "\n" + text);
  return 0;
}
