// libFuzzer target: a topology JSON file (parseTopology: what doctor dumps and users attach).
// Property: an accepted topology written out is accepted again, with the same key.
#include "tests/fuzz/fuzz_support.h"
#include "topo/topology_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tpcomm::topo::Topology topo;
  std::string why;
  if (!tpcomm::topo::parseTopology(tpcomm::fuzz::asText(data, size), &topo, &why)) return 0;
  const std::string text = tpcomm::topo::topologyToText(topo);
  tpcomm::topo::Topology again;
  tpcomm::fuzz::check(tpcomm::topo::parseTopology(text, &again, &why),
                      "topologyToText output parses again", why + "\n" + text);
  tpcomm::fuzz::check(again.key() == topo.key(), "the written topology has the same key", text);
  return 0;
}
