// Ranks sharing a GPU: a block of a collective spins until its peers' blocks have written, so when
// several ranks' kernels share one GPU, every block that waits must be resident together with the
// blocks it waits for, or the resident ones wait for blocks that can never start (a deadlock
// until the deadline). The planner caps every grid of such a communicator so that whatever runs
// together fits, whatever the sizes, variants and delays of the calls (docs/PROTOCOL.md,
// "Ranks sharing a GPU").
//
// The rule counts blocks as whole multiprocessors. Every tpcomm kernel is compiled for at most
// kThreadsPerBlock threads (its launch bound), so any one block fits an SM that holds none of
// ours, but a 512-thread block of a 128-register kernel needs that SM's whole register file. A
// rank has at most residentGridsPerRank grids resident at once. So with every grid capped at
// floor(SMs / (ranks x grids per rank)) blocks, at most SMs of our blocks are resident, and while
// one waits to start, an SM holding none of them exists. A cap per variant (SM slots of that
// variant's own occupancy) packed each rank's share to 100% of the GPU in that variant's units:
// grids of different variants then fragment the SMs (small blocks of one rank spread over every
// SM, no SM left with a free register file for a peer's large block), which deadlocked chains of
// calls switching sizes (issue 33). Clusters need several free SMs of one GPC, which no count of
// blocks guarantees: ranks sharing a GPU launch none (comm/lifecycle/fabric.cc).
// Pure C++: the CPU tests feed fake GPUs.
#pragma once

#include <vector>

namespace tpcomm {

struct GridCaps {
  int ranks_per_gpu = 1;  // on the most crowded GPU; 1: every rank has its GPU, nothing is capped
  int blocks = 0;         // the most blocks of any grid when any(); at least 1
  // False when a shared GPU has fewer SMs than grids resident at once: then even one block a grid
  // can deadlock, and init refuses the communicator (comm/lifecycle/fabric.cc).
  bool hold = true;

  bool any() const { return ranks_per_gpu > 1; }
};

// One GPU of a communicator: its multiprocessors as the least of its ranks' views (an MPS limit
// gives fewer), whether a kernel there may start under programmatic dependent launch while the
// previous one runs (sm_90+), and how many of the communicator's ranks run on it.
struct GpuShare {
  int sms = 0;
  bool pdl = false;
  int ranks = 0;
};

// Grids of one rank resident at once: the call's, and under programmatic dependent launch the
// next call's too (launched once every block of this call has pushed; its blocks sit in
// griddepcontrol.wait on SM resources while this call's blocks wait for the peers). The next but
// one cannot start before this call completes: every kernel lets its dependents launch only after
// its own griddepcontrol.wait.
int residentGridsPerRank(bool pdl);

// The most blocks a grid of one of `ranks` ranks sharing `sms` multiprocessors may launch:
// floor(sms / (ranks x grids per rank)), at least 1 (a GPU with fewer SMs than grids cannot hold
// every grid at any cap: GridCaps::hold).
int coResidentBlocks(int sms, int ranks, bool pdl);

// The caps of a communicator over its GPUs: the least coResidentBlocks over the GPUs that more
// than one rank uses. GPUs with one rank impose nothing (their grids stay as without sharing).
GridCaps gridCapsOf(const std::vector<GpuShare>& gpus);

}  // namespace tpcomm
