// Runs the fabric probe once per machine and remembers it, like the P2P test (p2p_cache.h):
//   <user cache folder>/probe-<Topology::key()>.json   (format: fabric_probe_json.h)
// read with the trusted-file rules (common/trusted_file.h), written atomically (mode 0600). The
// key covers the GPUs and the driver, the file's fabric_hash the bus ids, paths and P2P support of
// the GPUs probed: a change of any of them makes the cached numbers stale, and the probe runs
// again. A corrupt, foreign or planted file is ignored with a warning and replaced.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "topo/probe/fabric_probe.h"
#include "topo/topology.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {
namespace topo {

// userCacheDir()/probe-<key>.json; "" when there is no cache folder.
std::string fabricProbeCachePath(const Topology& topo);

// Reads a cached probe for these GPUs; false with a reason when missing (*missing), unreadable,
// corrupt, or for another machine, driver, fabric or GPU set (stale: the probe must run again).
bool readFabricProbeCache(const std::string& path, const std::string& key, const std::string& hash,
                          const std::vector<int>& gpus, FabricProbe* out, std::string* why,
                          bool* missing = nullptr);
tpcommResult_t writeFabricProbeCache(const std::string& path, const FabricProbe& probe);

// Measures: fills every number it can within budget_ms (kernels/runtime/fabric_probe_run.h
// runFabricProbe, which callers above this layer pass; the CPU tests pass a fake). Returns false
// when it could not run at all (*why).
using FabricProber = std::function<bool(const std::vector<int>& gpus, int budget_ms,
                                        FabricProbe* out, std::string* why)>;

struct FabricProbeOptions {
  int budget_ms = 3000;    // the whole probe, every measurement with its own deadline inside
  bool use_cache = true;   // read and update the per-machine cache
  bool reprobe = false;    // ignore a cached result (tpcomm doctor --reprobe)
  bool may_run = true;     // false: the cache only (TPCOMM_FABRIC_PROBE=cached)
  std::string cache_path;  // "": fabricProbeCachePath(topo)
  FabricProber prober;     // empty: the cache only (as may_run = false)
};

// kFile: named on the command line (tpcomm doctor --probe FILE: what the policy would do on a
// fabric that probes so).
enum class ProbeSource { kNone, kCache, kMeasured, kFile };
const char* probeSourceName(ProbeSource s);  // "none", "cached", "measured", "file"

// The probe of `gpus` (topology indices; P2P health already checked): from the cache when it is
// current, else measured (when options allow) and cached; a probe cut short (an error) is not
// cached. *source says which; kNone with *why when there is no probe.
ProbeSource obtainFabricProbe(const Topology& topo, const std::vector<int>& gpus,
                              const FabricProbeOptions& options, FabricProbe* out,
                              std::string* why);

}  // namespace topo
}  // namespace tpcomm
