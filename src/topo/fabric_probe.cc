#include "topo/fabric_probe.h"

#include <algorithm>

#include "common/str_format.h"

namespace tpcomm {
namespace topo {
namespace {

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !(x > 0); }), v.end());
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

template <typename Field>
double medianOf(const FabricProbe& p, Field field) {
  std::vector<double> v;
  for (const ProbePair& pair : p.pairs) v.push_back(pair.speed.*field);
  return median(std::move(v));
}

}  // namespace

bool FabricProbe::sameGpu() const {
  if (pairs.empty()) return false;
  for (const ProbePair& p : pairs)
    if (p.a != p.b) return false;
  return true;
}

double medianStoreGbps(const FabricProbe& p) {
  return medianOf(p, &LinkSpeed::store_gbps);
}

double medianLoadGbps(const FabricProbe& p) {
  return medianOf(p, &LinkSpeed::load_gbps);
}

FabricFinding judgeFabric(const FabricProbe& p, bool p2p_works) {
  FabricFinding f;
  if (!p2p_works) {
    f.verdict = FabricVerdict::kNoP2p;
    f.what = "no working P2P between the GPUs";
    if (p.host.store_gbps > 0)
      f.what += strFormat(
          " (pinned host memory: stores %.1f GB/s, loads %.1f GB/s, copies "
          "%.1f GB/s, %.2f us one way)",
          p.host.store_gbps, p.host.load_gbps, p.host.copy_gbps, p.host.latency_us);
    f.action =
        "tpcomm goes through pinned host memory (host_oneshot, host_bulk; NCCL where it "
        "measures faster)";
    return f;
  }
  if (p.gpus.size() < 2) {
    f.verdict = FabricVerdict::kUnknown;
    f.what = strFormat(
        "one GPU: pinned host memory only (stores %.1f GB/s, loads %.1f GB/s, "
        "copies %.1f GB/s, %.2f us one way)",
        p.host.store_gbps, p.host.load_gbps, p.host.copy_gbps, p.host.latency_us);
    f.action = "nothing to decide: an all-reduce needs two GPUs";
    return f;
  }
  const double single_store = medianStoreGbps(p);
  const double single_load = medianLoadGbps(p);
  const double all_store = p.all_pairs.store_gbps;
  const double all_load = p.all_pairs.load_gbps;
  if (!(single_store > 0) || !(all_store > 0) || !(all_load > 0)) {
    f.verdict = FabricVerdict::kUnknown;
    f.what = "the fabric probe has no all-pairs store and load numbers" +
             (p.error.empty() ? std::string() : " (" + p.error + ")");
    f.action = "tpcomm keeps its push defaults; `tpcomm doctor` probes again";
    return f;
  }
  const double ratio = all_store / single_store;
  const std::string numbers = strFormat(
      "SM stores %.1f GB/s per GPU with every pair at once vs %.1f GB/s for one pair (%.2fx); "
      "loads %.1f vs %.1f GB/s",
      all_store, single_store, ratio, all_load, single_load > 0 ? single_load : -1.0);
  if (ratio < kCollapseStoreRatio && all_load >= kLoadsHoldFactor * all_store) {
    f.verdict = FabricVerdict::kWriteCollapse;
    f.what = "posted-write collapse: " + numbers;
    f.action =
        "SM pushes are never used here: the pull variants (oneshot_pull, twoshot_pull; "
        "island_pull on two-socket boxes) read over the fabric instead, NCCL where it "
        "measures faster";
    return f;
  }
  f.verdict = FabricVerdict::kPushFine;
  f.what = "stores hold with every pair at once: " + numbers;
  f.action = "tpcomm pushes (oneshot, twoshot; island on two-socket boxes)";
  return f;
}

}  // namespace topo
}  // namespace tpcomm
