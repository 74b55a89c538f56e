// What one step of the copy-engine one-shot (oneshot_ce) enqueues, as plain data: the kernels'
// grids and roles and the copies' peers, in stream order. ce_copies.cc enqueues exactly this list;
// the CPU tests walk it for the protocol's invariants (docs/PROTOCOL.md, "Copy engines"). Pure
// C++: no CUDA.
#pragma once

#include <cstddef>

#include "kernels/layout/ce_layout.h"

namespace tpcomm {

enum class CeOpKind {
  kGuard,     // kernel, one block: waits for the peers' acknowledgements of the slot
  kDataCopy,  // this rank's input into `peer`'s landing region
  kFlagCopy,  // this rank's flag word into `peer`'s flag of the slot
  kWait,      // kernel, one block: fingerprints, then waits for every peer's flag
  kReduce,    // kernel, the call's grid: sums and acknowledges; waits for nothing
};

struct CeOp {
  CeOpKind kind;
  int peer = -1;       // copies: the destination rank
  int blocks = 0;      // kernels: the grid
  int threads = 0;     // kernels: threads per block
  bool pdl = false;    // kernels: launched with programmatic dependent launch
  size_t operand = 0;  // kernels: the slot and role word the kernel decodes (ce_layout.h)
};

// A step's operations: a guard, a data copy per peer, a flag copy per peer, the wait, the reduce.
constexpr int kMaxCeStepOps = 3 + 2 * (kMaxRanks - 1);
struct CeStep {
  CeOp ops[kMaxCeStepOps];
  int n = 0;
};

// True for the kernels that spin on a peer (the guard and the wait).
bool ceOpWaitsForPeers(const CeOp& op);

// The step of rank `rank` of `world` into landing slot `slot`, its reduce kernel on `blocks` x
// `threads`; `pdl`: whether the guard may start under the previous kernel of the stream.
CeStep ceStep(int world, int rank, int slot, int blocks, int threads, bool pdl);

}  // namespace tpcomm
