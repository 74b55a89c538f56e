// libFuzzer target: the P2P health cache file (readP2pCache, which only reads from a path: the
// input goes through a private file). Property: accepted entries written back read the same.
#include "tests/fuzz/fuzz_support.h"
#include "topo/p2p_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tpcomm::topo::P2pCacheEntry;
  const std::string& path = tpcomm::fuzz::writeInputFile(data, size);
  std::vector<P2pCacheEntry> entries;
  std::string why;
  if (!tpcomm::topo::readP2pCache(path, tpcomm::fuzz::kSeedKey, &entries, &why)) return 0;
  tpcomm::fuzz::check(
      tpcomm::topo::writeP2pCache(path, tpcomm::fuzz::kSeedKey, entries) == tpcommSuccess,
      "accepted entries can be written back");
  std::vector<P2pCacheEntry> again;
  tpcomm::fuzz::check(tpcomm::topo::readP2pCache(path, tpcomm::fuzz::kSeedKey, &again, &why),
                      "writeP2pCache output reads again", why);
  bool same = again.size() == entries.size();
  for (size_t i = 0; same && i < entries.size(); ++i)
    same = again[i].uuid_a == entries[i].uuid_a && again[i].uuid_b == entries[i].uuid_b &&
           again[i].result == entries[i].result && again[i].why == entries[i].why;
  tpcomm::fuzz::check(same, "writeP2pCache then readP2pCache gives the same entries");
  return 0;
}
