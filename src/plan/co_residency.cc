#include "plan/co_residency.h"

#include <algorithm>
#include <climits>

namespace tpcomm {

int residentGridsPerRank(bool pdl) {
  return pdl ? 2 : 1;
}

int coResidentBlocks(int sms, int ranks, bool pdl) {
  const int grids = std::max(ranks, 1) * residentGridsPerRank(pdl);
  return std::max(std::max(sms, 0) / grids, 1);
}

GridCaps gridCapsOf(const std::vector<GpuShare>& gpus) {
  GridCaps caps;
  int blocks = INT_MAX;
  for (const GpuShare& g : gpus) {
    if (g.ranks < 2) continue;
    caps.ranks_per_gpu = std::max(caps.ranks_per_gpu, g.ranks);
    blocks = std::min(blocks, coResidentBlocks(g.sms, g.ranks, g.pdl));
    caps.hold = caps.hold && g.sms >= g.ranks * residentGridsPerRank(g.pdl);
  }
  if (caps.any()) caps.blocks = blocks;
  return caps;
}

}  // namespace tpcomm
