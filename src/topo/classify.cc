#include "topo/classify.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "common/error.h"

namespace tpcomm {
namespace topo {
namespace {

bool validRanks(const Topology& topo, const std::vector<int>& rank_gpu) {
  if (rank_gpu.empty()) return false;
  for (int g : rank_gpu)
    if (g < 0 || g >= topo.size()) return false;
  return static_cast<int>(topo.links.size()) == topo.size();
}

PathClass pathBetween(const Topology& topo, int gpu_a, int gpu_b) {
  return gpu_a == gpu_b ? PathClass::kSelf : topo.link(gpu_a, gpu_b).path;
}

std::string pairText(int a, int b) {
  return "GPU " + std::to_string(a) + " - GPU " + std::to_string(b);
}

// Union-find over ranks, joined where the path is at most `limit`.
std::vector<int> componentsUpTo(const Topology& topo, const std::vector<int>& rank_gpu,
                                PathClass limit) {
  const int n = static_cast<int>(rank_gpu.size());
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&parent](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      if (pathBetween(topo, rank_gpu[a], rank_gpu[b]) <= limit) parent[root(a)] = root(b);
  for (int a = 0; a < n; ++a) parent[a] = root(a);
  return parent;
}

std::string islandText(const std::vector<int>& island_of_rank, int which) {
  std::string s = "{";
  for (size_t r = 0; r < island_of_rank.size(); ++r)
    if (island_of_rank[r] == which) s += (s.size() > 1 ? "," : "") + std::to_string(r);
  return s + "}";
}

}  // namespace

bool p2pUsable(const LinkInfo& link) {
  return link.path == PathClass::kSelf ||
         (link.p2p_supported && link.p2p_works != P2pHealth::kBroken);
}

tpcommResult_t classify(const Topology& topo, const std::vector<int>& rank_gpu,
                        Classification* out) {
  if (!validRanks(topo, rank_gpu))
    return fail(tpcommInvalidArgument,
                "topology classification: %zu ranks, each needs a GPU index in 0..%d",
                rank_gpu.size(), topo.size() - 1);
  *out = Classification();
  const std::set<int> distinct(rank_gpu.begin(), rank_gpu.end());
  const std::vector<int> gpus(distinct.begin(), distinct.end());
  bool all_nvlink = true;
  int min_links = 1 << 30;
  std::string first_non_nvlink, first_no_p2p;
  for (size_t i = 0; i < gpus.size(); ++i) {
    for (size_t j = i + 1; j < gpus.size(); ++j) {
      const LinkInfo& l = topo.link(gpus[i], gpus[j]);
      out->worst_path = std::max(out->worst_path, l.path);
      const std::string pair = pairText(gpus[i], gpus[j]);
      if (!p2pUsable(l) && first_no_p2p.empty())
        first_no_p2p = pair + (l.p2p_supported ? ": P2P broken" : ": P2P not supported");
      if (l.path != PathClass::kNvlink || !p2pUsable(l)) {
        all_nvlink = false;
        if (first_non_nvlink.empty()) first_non_nvlink = pair + ": " + pathClassName(l.path);
      } else {
        min_links = std::min(min_links, l.nvlink_count);
      }
    }
  }
  const std::string n = std::to_string(gpus.size()) + " GPUs";
  if (gpus.size() == 1) {
    out->fabric = Fabric::kNvlink;
    out->reason = "all " + std::to_string(rank_gpu.size()) + " ranks on one GPU";
  } else if (all_nvlink) {
    out->fabric = Fabric::kNvlink;
    out->reason = "NVLink between all " + n +
                  (min_links > 0 ? " (at least " + std::to_string(min_links) + " links a pair)"
                                 : " (link count unknown)");
  } else if (first_no_p2p.empty()) {
    out->fabric = Fabric::kPcie;
    out->reason = "P2P between all " + n + ", not all NVLink (" + first_non_nvlink +
                  "; worst path " + pathClassName(out->worst_path) + ")";
  } else {
    out->fabric = Fabric::kHost;
    out->reason = "no working P2P between all " + n + " (" + first_no_p2p + ")";
  }
  if (out->fabric == Fabric::kPcie && twoIslands(topo, rank_gpu, &out->island_of_rank)) {
    out->two_islands = true;
    out->reason += "; two islands " + islandText(out->island_of_rank, 0) + " " +
                   islandText(out->island_of_rank, 1);
  } else {
    out->island_of_rank.clear();
  }
  return tpcommSuccess;
}

Fabric fabricFor(const Topology& topo, const std::vector<int>& rank_gpu) {
  Classification c;
  return classify(topo, rank_gpu, &c) == tpcommSuccess ? c.fabric : Fabric::kHost;
}

bool twoIslands(const Topology& topo, const std::vector<int>& rank_gpu,
                std::vector<int>* island_of_rank) {
  const int n = static_cast<int>(rank_gpu.size());
  if (n < 4 || n % 2 != 0 || !validRanks(topo, rank_gpu)) return false;
  std::set<PathClass> levels;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) levels.insert(pathBetween(topo, rank_gpu[a], rank_gpu[b]));
  // Try each path class as the bound inside an island, best first; joining ranks whose path is
  // within the bound must give exactly two equal groups in which every pair is within it (then
  // every path across is worse, or the groups would have joined).
  for (PathClass limit : levels) {
    const std::vector<int> comp = componentsUpTo(topo, rank_gpu, limit);
    const std::set<int> roots(comp.begin(), comp.end());
    if (roots.size() != 2) continue;
    if (std::count(comp.begin(), comp.end(), comp[0]) != n / 2) continue;
    bool cliques = true;
    for (int a = 0; a < n && cliques; ++a)
      for (int b = a + 1; b < n && cliques; ++b)
        if (comp[a] == comp[b] && pathBetween(topo, rank_gpu[a], rank_gpu[b]) > limit)
          cliques = false;
    if (!cliques) continue;
    if (island_of_rank) {
      island_of_rank->assign(n, 0);
      for (int r = 0; r < n; ++r) (*island_of_rank)[r] = comp[r] == comp[0] ? 0 : 1;
    }
    return true;
  }
  return false;
}

}  // namespace topo
}  // namespace tpcomm
