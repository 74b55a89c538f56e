#include "topo/p2p_cache.h"

#include <algorithm>
#include <set>

#include "common/error.h"
#include "common/json.h"
#include "common/log.h"
#include "common/trusted_file.h"
#include "topo/cache_dir.h"
#include "topo/p2p_test.h"

namespace tpcomm {
namespace topo {
namespace {

constexpr int kCacheVersion = 1;

P2pCacheEntry makeEntry(const std::string& u, const std::string& v, P2pHealth result,
                        const std::string& why) {
  P2pCacheEntry e;
  e.uuid_a = std::min(u, v);
  e.uuid_b = std::max(u, v);
  e.result = result;
  e.why = why;
  return e;
}

bool entryFromJson(const json::Value& v, size_t i, P2pCacheEntry* e, std::string* why) {
  json::ObjectReader r(v, "pairs[" + std::to_string(i) + "]", why);
  const json::Value* uuids = r.required("uuids");
  std::string result;
  r.string("result", &result);
  r.string("why", &e->why, /*allow_empty=*/true);
  r.onlyKeys({"uuids", "result", "why"});
  if (!r.ok()) return false;
  if (!uuids->isArray() || uuids->items().size() != 2 || !uuids->items()[0].isString() ||
      !uuids->items()[1].isString() || uuids->items()[0].asString().empty() ||
      uuids->items()[0].asString() >= uuids->items()[1].asString())
    return r.fail("uuids", "expected two different GPU UUIDs in sorted order");
  e->uuid_a = uuids->items()[0].asString();
  e->uuid_b = uuids->items()[1].asString();
  if (!parseP2pHealth(result, &e->result) ||
      (e->result != P2pHealth::kWorks && e->result != P2pHealth::kBroken))
    return r.fail("result", "'" + result + "' is not 'works' or 'broken'");
  return true;
}

const P2pCacheEntry* findEntry(const std::vector<P2pCacheEntry>& entries, const std::string& u,
                               const std::string& v) {
  const std::string a = std::min(u, v), b = std::max(u, v);
  for (const P2pCacheEntry& e : entries)
    if (e.uuid_a == a && e.uuid_b == b) return &e;
  return nullptr;
}

}  // namespace

std::string p2pCachePath(const Topology& topo) {
  const std::string dir = userCacheDir();
  return dir.empty() ? "" : dir + "/p2p-" + topo.key() + ".json";
}

bool readP2pCache(const std::string& path, const std::string& key,
                  std::vector<P2pCacheEntry>* entries, std::string* why, bool* missing) {
  entries->clear();
  std::string text;
  const TrustedRead got = readTrustedFile(path, &text, why);
  if (missing) *missing = got == TrustedRead::kMissing;
  if (got != TrustedRead::kRead) return false;
  json::Value root;
  if (!json::parse(text, &root, why)) return false;
  json::ObjectReader r(root, "", why);
  int64_t version = 0;
  std::string file_key;
  r.integer("tpcomm_p2p_cache", 1, 1 << 20, &version);
  r.string("topology_key", &file_key);
  const json::Value* pairs = r.required("pairs");
  r.onlyKeys({"tpcomm_p2p_cache", "topology_key", "pairs"});
  if (!r.ok()) return false;
  if (version != kCacheVersion)
    return r.fail("tpcomm_p2p_cache", "version " + std::to_string(version) + " is not " +
                                          std::to_string(kCacheVersion));
  if (file_key != key)
    return r.fail("topology_key",
                  "'" + file_key + "' is another machine's (this one is '" + key + "')");
  if (!pairs->isArray()) return r.fail("pairs", "expected an array");
  std::vector<P2pCacheEntry> read(pairs->items().size());
  for (size_t i = 0; i < read.size(); ++i)
    if (!entryFromJson(pairs->items()[i], i, &read[i], why)) return false;
  *entries = std::move(read);
  return true;
}

tpcommResult_t writeP2pCache(const std::string& path, const std::string& key,
                             const std::vector<P2pCacheEntry>& entries) {
  json::Value root = json::Value::object();
  root.set("tpcomm_p2p_cache", json::Value::integer(kCacheVersion));
  root.set("topology_key", json::Value::string(key));
  json::Value pairs = json::Value::array();
  for (const P2pCacheEntry& e : entries) {
    json::Value o = json::Value::object();
    json::Value uuids = json::Value::array();
    uuids.push(json::Value::string(e.uuid_a));
    uuids.push(json::Value::string(e.uuid_b));
    o.set("uuids", std::move(uuids));
    o.set("result", json::Value::string(p2pHealthName(e.result)));
    o.set("why", json::Value::string(e.why));
    pairs.push(std::move(o));
  }
  root.set("pairs", std::move(pairs));
  return writeTextFileAtomic(path, json::write(root));
}

tpcommResult_t checkP2pHealth(Topology* topo, const std::vector<int>& gpus,
                              const P2pCheckOptions& options) {
  for (int g : gpus)
    if (g < 0 || g >= topo->size())
      return fail(tpcommInvalidArgument, "P2P check: GPU index %d is not in the topology (%d GPUs)",
                  g, topo->size());
  const std::set<int> distinct(gpus.begin(), gpus.end());
  const std::string key = topo->key();
  const std::string path = !options.use_cache           ? ""
                           : options.cache_path.empty() ? p2pCachePath(*topo)
                                                        : options.cache_path;
  std::vector<P2pCacheEntry> cached;
  if (!path.empty()) {
    std::string why;
    bool missing = false;
    if (!readP2pCache(path, key, &cached, &why, &missing) && !missing)
      TPCOMM_WARN(P2P, "ignoring the P2P cache %s: %s", path.c_str(), why.c_str());
  }
  const P2pTester tester = options.tester ? options.tester : P2pTester(testP2p);
  bool changed = false;
  for (int a : distinct) {
    for (int b : distinct) {
      if (b <= a) continue;
      LinkInfo link = topo->link(a, b);
      const std::string& ua = topo->gpus[a].uuid;
      const std::string& ub = topo->gpus[b].uuid;
      const P2pCacheEntry* hit = options.retest ? nullptr : findEntry(cached, ua, ub);
      std::string why;
      if (!link.p2p_supported) {
        link.p2p_works = P2pHealth::kNotTested;
      } else if (hit) {
        link.p2p_works = hit->result;
        why = "cached: " + hit->why;
      } else {
        link.p2p_works = tester(a, b, options.timeout_ms, &why);
        if (link.p2p_works == P2pHealth::kWorks || link.p2p_works == P2pHealth::kBroken) {
          const P2pCacheEntry fresh = makeEntry(ua, ub, link.p2p_works, why);
          cached.erase(std::remove_if(cached.begin(), cached.end(),
                                      [&fresh](const P2pCacheEntry& e) {
                                        return e.uuid_a == fresh.uuid_a && e.uuid_b == fresh.uuid_b;
                                      }),
                       cached.end());
          cached.push_back(fresh);
          changed = true;
        }
      }
      if (link.p2p_works == P2pHealth::kBroken)
        TPCOMM_WARN(P2P, "P2P between GPU %d and GPU %d is broken, using host memory: %s", a, b,
                    why.c_str());
      else
        TPCOMM_DEBUG(P2P, "P2P GPU %d - GPU %d: %s (%s)", a, b, p2pHealthName(link.p2p_works),
                     why.c_str());
      topo->setLink(a, b, link);
    }
  }
  if (changed && !path.empty() && writeP2pCache(path, key, cached) != tpcommSuccess)
    TPCOMM_WARN(P2P, "P2P results not cached (%s): the next start tests again", lastError());
  return tpcommSuccess;
}

}  // namespace topo
}  // namespace tpcomm
