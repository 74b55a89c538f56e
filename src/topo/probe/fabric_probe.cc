#include "topo/probe/fabric_probe.h"

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

// The numbers every verdict with numbers shows; `together` and `alone` name the two rounds.
std::string storeLoadNumbers(const FabricProbe& p, const char* together, const char* alone) {
  const double single_store = medianStoreGbps(p);
  const double single_load = medianLoadGbps(p);
  return strFormat(
      "SM stores %.1f GB/s per GPU %s vs %.1f GB/s %s (%.2fx); loads %.1f vs %.1f GB/s",
      p.all_pairs.store_gbps, together, single_store, alone, p.all_pairs.store_gbps / single_store,
      p.all_pairs.load_gbps, single_load > 0 ? single_load : -1.0);
}

bool haveStoreAndLoadNumbers(const FabricProbe& p) {
  return medianStoreGbps(p) > 0 && p.all_pairs.store_gbps > 0 && p.all_pairs.load_gbps > 0;
}

// Two buffers on one GPU ({0, 0}: what ranks sharing a GPU use): the probe measured that GPU's
// memory and launches, not a link, so there is no fabric that could collapse. Stores falling with
// both buffers at once say something else loaded the GPU while it probed, not a write collapse.
FabricFinding judgeOneGpu(const FabricProbe& p) {
  FabricFinding f;
  const std::string label = "one GPU: two buffers on it, memory and launches, not a link";
  if (!haveStoreAndLoadNumbers(p)) {
    f.verdict = FabricVerdict::kUnknown;
    f.what = label + ": no store and load numbers with both buffers at once" +
             (p.error.empty() ? std::string() : " (" + p.error + ")");
    f.action = "tpcomm keeps its push defaults; `tpcomm doctor --reprobe` probes again";
    return f;
  }
  const std::string numbers = storeLoadNumbers(p, "with both buffers at once", "for one");
  if (p.all_pairs.store_gbps / medianStoreGbps(p) < kCollapseStoreRatio) {
    f.verdict = FabricVerdict::kUnknown;
    f.what = label + ": stores fell with both buffers at once: " + numbers +
             "; no link is crossed, so this is no write collapse: something else loaded the GPU";
    f.action =
        "tpcomm keeps its push defaults; `tpcomm doctor --reprobe` on an idle GPU measures again";
    return f;
  }
  f.verdict = FabricVerdict::kPushFine;
  f.what = label + ": stores hold with both buffers at once: " + numbers;
  f.action =
      "ranks sharing this GPU push (oneshot, twoshot); a link is judged where two GPUs are probed";
  return f;
}

}  // namespace

bool FabricProbe::sameGpu() const {
  // By the GPUs probed, so that a probe cut short before its first pair is still labelled.
  if (gpus.size() >= 2)
    return std::all_of(gpus.begin(), gpus.end(), [this](int g) { return g == gpus[0]; });
  if (!gpus.empty() || pairs.empty()) return false;
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
  if (p.sameGpu()) return judgeOneGpu(p);  // nothing crosses a link: P2P does not matter
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
  const double all_store = p.all_pairs.store_gbps;
  const double all_load = p.all_pairs.load_gbps;
  if (!haveStoreAndLoadNumbers(p)) {
    f.verdict = FabricVerdict::kUnknown;
    f.what = "the fabric probe has no all-pairs store and load numbers" +
             (p.error.empty() ? std::string() : " (" + p.error + ")");
    f.action = "tpcomm keeps its push defaults; `tpcomm doctor` probes again";
    return f;
  }
  const double ratio = all_store / medianStoreGbps(p);
  const std::string numbers = storeLoadNumbers(p, "with every pair at once", "for one pair");
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
