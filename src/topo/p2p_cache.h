// Remembers P2P test results per machine, so that only the first start on a machine (or after a
// driver update, or with other GPUs) pays for the tests. The file is
//   <user cache folder>/p2p-<Topology::key()>.json
//   {"tpcomm_p2p_cache": 1, "topology_key": "...",
//    "pairs": [{"uuids": ["GPU-...", "GPU-..."], "result": "works", "why": "..."}, ...]}
// keyed by GPU UUIDs, not CUDA ordinals, so CUDA_VISIBLE_DEVICES does not confuse it. A corrupt or
// foreign file is ignored with a warning and rewritten; a file is never trusted half-read.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "topo/topology.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {
namespace topo {

struct P2pCacheEntry {
  std::string uuid_a, uuid_b;              // sorted: uuid_a < uuid_b
  P2pHealth result = P2pHealth::kUnknown;  // only kWorks and kBroken are stored
  std::string why;
};

// userCacheDir()/p2p-<key>.json; "" when there is no cache folder.
std::string p2pCachePath(const Topology& topo);

// Reads a cache file written for topology `key`. False with a reason when the file is missing
// (*missing set), unreadable, corrupt or for another key; entries are then not to be used.
bool readP2pCache(const std::string& path, const std::string& key,
                  std::vector<P2pCacheEntry>* entries, std::string* why, bool* missing = nullptr);
tpcommResult_t writeP2pCache(const std::string& path, const std::string& key,
                             const std::vector<P2pCacheEntry>& entries);

using P2pTester = std::function<P2pHealth(int dev_a, int dev_b, int timeout_ms, std::string* why)>;

struct P2pCheckOptions {
  int timeout_ms = 2000;   // per pair and per copy direction
  bool use_cache = true;   // read and update the per-machine cache file
  bool retest = false;     // ignore cached results (tpcomm doctor --retest-p2p)
  std::string cache_path;  // "" : p2pCachePath(topo)
  P2pTester tester;        // empty: testP2p (the CPU tests pass a fake)
};

// Sets p2p_works for every pair of distinct GPUs in `gpus` (topology indices = CUDA ordinals)
// whose P2P is supported: from the cache when it has the pair, else by running the test; new
// results are written back. Unsupported pairs become kNotTested. A test that could not run
// (kUnknown) is not cached. Fails only for GPU indices outside the topology; a cache that cannot
// be read or written costs a warning, never the communicator.
tpcommResult_t checkP2pHealth(Topology* topo, const std::vector<int>& gpus,
                              const P2pCheckOptions& options = P2pCheckOptions());

}  // namespace topo
}  // namespace tpcomm
