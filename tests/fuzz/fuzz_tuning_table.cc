// libFuzzer target: a tuning table's text (parseTuningTable), which decides the algorithm of every
// call, for the seeds' topology key.
// Property: an accepted table written out is accepted again with the same rules.
#include "plan/tuning_table.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tpcomm::TuningTable table;
  std::string why;
  if (!tpcomm::parseTuningTable(tpcomm::fuzz::asText(data, size), tpcomm::fuzz::kSeedKey, &table,
                                &why))
    return 0;
  const std::string text = tpcomm::tuningTableText(table);
  tpcomm::TuningTable again;
  tpcomm::fuzz::check(tpcomm::parseTuningTable(text, tpcomm::fuzz::kSeedKey, &again, &why),
                      "tuningTableText output parses again", why + "\n" + text);
  tpcomm::fuzz::check(again.fabric == table.fabric && again.tables.size() == table.tables.size(),
                      "the written table has the same fabric and worlds", text);
  for (size_t i = 0; i < table.tables.size(); ++i) {
    const tpcomm::WorldTable &a = table.tables[i], &b = again.tables[i];
    bool same = a.world == b.world && a.rules.size() == b.rules.size();
    for (size_t r = 0; same && r < a.rules.size(); ++r)
      same = a.rules[r].max_bytes == b.rules[r].max_bytes && a.rules[r].algo == b.rules[r].algo;
    tpcomm::fuzz::check(same, "the written table has the same rules", text);
  }
  return 0;
}
