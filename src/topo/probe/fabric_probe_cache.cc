#include "topo/probe/fabric_probe_cache.h"

#include "common/error.h"
#include "common/json.h"
#include "common/log.h"
#include "common/trusted_file.h"
#include "topo/cache_dir.h"
#include "topo/probe/fabric_probe_json.h"

namespace tpcomm {
namespace topo {

std::string fabricProbeCachePath(const Topology& topo) {
  const std::string dir = userCacheDir();
  return dir.empty() ? "" : dir + "/probe-" + topo.key() + ".json";
}

const char* probeSourceName(ProbeSource s) {
  switch (s) {
    case ProbeSource::kNone:
      return "none";
    case ProbeSource::kCache:
      return "cached";
    case ProbeSource::kMeasured:
      return "measured";
    case ProbeSource::kFile:
      return "file";
  }
  return "?";
}

bool readFabricProbeCache(const std::string& path, const std::string& key, const std::string& hash,
                          const std::vector<int>& gpus, FabricProbe* out, std::string* why,
                          bool* missing) {
  std::string text;
  const TrustedRead got = readTrustedFile(path, &text, why);
  if (missing) *missing = got == TrustedRead::kMissing;
  if (got != TrustedRead::kRead) return false;
  json::Value root;
  FabricProbe p;
  if (!json::parse(text, &root, why) || !fabricProbeFromJson(root, &p, why)) return false;
  if (p.topology_key != key) {
    *why = "topology_key '" + p.topology_key + "' is another machine's or driver's ('" + key + "')";
    return false;
  }
  if (p.fabric_hash != hash) {
    *why = "fabric_hash " + p.fabric_hash + " is not this fabric's (" + hash +
           "): GPUs moved, or their paths or P2P changed";
    return false;
  }
  if (p.gpus != gpus) {
    *why = "probed another set of GPUs";
    return false;
  }
  *out = std::move(p);
  return true;
}

tpcommResult_t writeFabricProbeCache(const std::string& path, const FabricProbe& probe) {
  return writeTextFileAtomic(path, json::write(fabricProbeToJson(probe)), 0600);
}

ProbeSource obtainFabricProbe(const Topology& topo, const std::vector<int>& gpus,
                              const FabricProbeOptions& o, FabricProbe* out, std::string* why) {
  const std::string key = topo.key();
  const std::string hash = probeFabricHash(topo, gpus);
  const std::string path = !o.use_cache           ? ""
                           : o.cache_path.empty() ? fabricProbeCachePath(topo)
                                                  : o.cache_path;
  std::string stale;
  if (!path.empty() && !o.reprobe) {
    bool missing = false;
    if (readFabricProbeCache(path, key, hash, gpus, out, &stale, &missing)) {
      TPCOMM_DEBUG(TOPO, "fabric probe from %s", path.c_str());
      return ProbeSource::kCache;
    }
    if (!missing)
      TPCOMM_WARN(TOPO, "fabric probe cache %s not used: %s", path.c_str(), stale.c_str());
  }
  if (!o.may_run) {
    *why = "no current cached probe" + (stale.empty() ? std::string() : " (" + stale + ")") +
           " and the probe may not run here (TPCOMM_FABRIC_PROBE=cached)";
    return ProbeSource::kNone;
  }
  FabricProbe p;
  p.topology_key = key;
  p.fabric_hash = hash;
  p.gpus = gpus;
  if (!o.prober) {
    *why = "no prober given (this caller only reads the cache)";
    return ProbeSource::kNone;
  }
  if (!o.prober(gpus, o.budget_ms, &p, why)) return ProbeSource::kNone;
  p.topology_key = key;  // whatever the prober left there, the cache is keyed on these
  p.fabric_hash = hash;
  p.gpus = gpus;
  *out = p;
  if (!p.error.empty()) {
    TPCOMM_WARN(TOPO, "fabric probe cut short (%s): not cached", p.error.c_str());
  } else if (!path.empty() && writeFabricProbeCache(path, p) != tpcommSuccess) {
    TPCOMM_WARN(TOPO, "fabric probe not cached (%s): the next start probes again", lastError());
  }
  return ProbeSource::kMeasured;
}

}  // namespace topo
}  // namespace tpcomm
