#include "plan/co_residency.h"

#include <algorithm>
#include <climits>

namespace tpcomm {

int GridCaps::capFor(tpcommVariant_t variant, int threads) const {
  if (!any() || variant < 0 || variant >= tpcommNumVariants) return 0;
  const int step = std::clamp((threads + 31) / 32 - 1, 0, kThreadSteps - 1);
  return blocks[variant][step];
}

int residentGridsPerRank(bool pdl) {
  return pdl ? 2 : 1;
}

int coResidentBlocks(int sms, int blocks_per_sm, int ranks, bool pdl) {
  const long long slots = static_cast<long long>(std::max(sms, 0)) * std::max(blocks_per_sm, 0);
  const long long grids = static_cast<long long>(std::max(ranks, 1)) * residentGridsPerRank(pdl);
  return static_cast<int>(std::clamp<long long>(slots / grids, 1, INT_MAX));
}

GridCaps gridCapsOf(const std::vector<GpuShare>& gpus) {
  GridCaps caps;
  for (int v = 0; v < tpcommNumVariants; ++v)
    for (int s = 0; s < kThreadSteps; ++s) caps.blocks[v][s] = INT_MAX;
  for (const GpuShare& g : gpus) {
    if (g.ranks < 2) continue;
    caps.ranks_per_gpu = std::max(caps.ranks_per_gpu, g.ranks);
    for (int v = 0; v < tpcommNumVariants; ++v)
      for (int s = 0; s < kThreadSteps; ++s)
        caps.blocks[v][s] = std::min(
            caps.blocks[v][s], coResidentBlocks(g.occupancy.sms, g.occupancy.blocks_per_sm[v][s],
                                                g.ranks, g.occupancy.pdl != 0));
  }
  if (!caps.any()) caps = GridCaps{};
  return caps;
}

}  // namespace tpcomm
