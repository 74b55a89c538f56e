// Ranks sharing a GPU: a block of an all-reduce spins until its peers' blocks of the same index
// have written, so when several ranks' kernels share one GPU, every rank's grid must be resident
// at once, or the blocks that are resident wait for blocks that can never start (a deadlock until
// the deadline). The planner caps every grid of such a communicator so that they all fit: the
// caps come from each GPU's occupancy of each variant (kernels/occupancy.h, exchanged in the rank
// handles), the same on every rank (the kernels pair blocks by index, so grids must be equal).
// Pure C++: the CPU tests feed fake occupancy numbers.
#pragma once

#include <vector>

#include "kernels/occupancy.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

struct GridCaps {
  int ranks_per_gpu = 1;  // on the most crowded GPU; 1: every rank has its GPU, nothing is capped
  // Most blocks of each variant at each thread step (kernels/occupancy.h); at least 1.
  int blocks[tpcommNumVariants][kThreadSteps] = {};

  bool any() const { return ranks_per_gpu > 1; }
  // The cap of `variant` at `threads` (rounded up to whole warps), or 0 when none applies.
  int capFor(tpcommVariant_t variant, int threads) const;
};

// One GPU of a communicator: its occupancy and how many of the communicator's ranks run on it.
struct GpuShare {
  VariantOccupancy occupancy{};
  int ranks = 0;
};

// Grids resident at once per rank: the call's, and under programmatic dependent launch the next
// call's too (it is launched once this call's blocks have pushed, and its blocks sit in
// griddepcontrol.wait on SM resources while this call's blocks wait for the peers).
int residentGridsPerRank(bool pdl);

// The most blocks of one variant each of `ranks` ranks may launch so that all of their grids fit
// `sms` multiprocessors of `blocks_per_sm` each: floor(sms * blocks_per_sm / (ranks * grids per
// rank)), at least 1 (a GPU with fewer block slots than that cannot hold every grid at any cap).
int coResidentBlocks(int sms, int blocks_per_sm, int ranks, bool pdl);

// The caps of a communicator over its GPUs: for each GPU that more than one rank uses, its
// coResidentBlocks per variant and thread step, the least over those GPUs. GPUs with one rank
// impose nothing (their grids stay as without sharing).
GridCaps gridCapsOf(const std::vector<GpuShare>& gpus);

}  // namespace tpcomm
