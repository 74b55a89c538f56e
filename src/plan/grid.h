// How many blocks and threads a call launches: a pure function of the call and the
// communicator's launch knobs, identical on every rank (ranks' blocks pair up by index). One SM
// pushes only ~9.4 GB/s into a peer's memory (2x H200), so a block is given about `block_bytes`
// of the message per step, not a fixed share of threads.
#pragma once

#include <cstddef>

#include "plan/knobs.h"

namespace tpcomm {

constexpr int kDefaultMaxBlocks = 128;

// A multi-step one-shot call splits each block into pushing and reducing warps (oneshot.cu) and
// keeps one vector per thread per round; host_bulk keeps a thread per vector whatever the batch.
// A batch of 4 loads per thread from kBatchFromBytes on (the link is saturated there and the
// reloads between steps cost), 1 below (latency). Measurements: docs/BENCHMARKS.md, "Launch knobs".
constexpr size_t kBatchFromBytes = 8u << 20;

struct GridPlan {
  int blocks = 1;
  int threads = 32;
  int push_batch = 1;
  int push_eighths = 2;             // LaunchKnobs::push_eighths
  bool co_resident_capped = false;  // fewer blocks than asked: ranks share a GPU (co_residency.h)
};

// chunk_bytes: the most bytes one step of the algorithm handles (one-shot: a peer region of the
// slot; two-shot and island: a chunk). world: ranks. resident_cap: where ranks share a GPU, the
// most blocks any grid may have (GridCaps::blocks, plan/co_residency.h); it wins over the knobs,
// and the grid is re-shaped to it (fewer blocks take more threads each). 0: no such cap.
GridPlan planGrid(int algo, size_t bytes, size_t chunk_bytes, int world, const LaunchKnobs& k,
                  int resident_cap = 0);

}  // namespace tpcomm
