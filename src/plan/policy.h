// The policy: which algorithm serves a call, the first question the planner (plan/planner.h)
// asks and the only one it asks here. Pure C++ (no CUDA), so every decision is unit-tested on a
// machine without GPU. Inputs are facts (world size, bytes, fabric, what is available); the
// output is an algorithm and a human-readable reason that the library logs, counts and reports
// (tpcommCommGetLastCall, tpcomm doctor).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/layout/island_world.h"
#include "topo/fabric.h"
#include "topo/probe/fabric_verdict.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

// A size table: the first row whose max_bytes >= the call's bytes gives the algorithm.
struct SizeRule {
  size_t max_bytes;
  int algo;  // tpcommAlgo_t
};
using SizeTable = std::vector<SizeRule>;

// What the policy reads of a communicator: CommFacts (plan/planner.h) is these and more, so the
// planner hands them over as they are.
struct PolicyFacts {
  int world = 2;
  Fabric fabric = Fabric::kNvlink;
  bool two_islands = false;          // PCIe box with two sockets / switch islands of equal size:
                                     // auto may pick island (forcing it needs only islandWorld)
  bool nccl_available = false;       // an NCCL communicator exists
  bool host_transport = false;       // the host shared-memory transport is set up
  bool ce_staging = false;           // the copy-engine variant's landing slots exist
  int forced_algo = -1;              // -1 auto, else tpcommAlgo_t (TPCOMM_ALGO / config.algo)
  bool strict = false;               // a fallback to NCCL is an error
  const SizeTable* tuned = nullptr;  // a measured table (tpcomm tune) for this machine, if any
  // The fabric probe's verdict (topo/probe/fabric_probe.h), agreed by every rank at init: over
  // PCIe, a write collapse takes the pull tables (SM pushes are never picked), anything else the
  // push tables. The one input the probe gives the policy; a tuned table names its algorithms
  // itself.
  FabricVerdict fabric_verdict = FabricVerdict::kUnknown;
};

// A call's bytes on a communicator with those facts.
struct PolicyInput : PolicyFacts {
  size_t bytes = 0;
};

struct Decision {
  int algo = tpcommAlgoAuto;
  bool fallback = false;                 // NCCL chosen although tpcomm was wanted
  tpcommResult_t error = tpcommSuccess;  // set when no algorithm may serve the call
  std::string reason;
};

// Built-in defaults per fabric and world size, from measurements (docs/BENCHMARKS.md); with
// two_islands (kPcie only), the table that lets auto pick the island algorithm (an estimate);
// over PCIe with a write collapse, the pull tables (estimates from the published numbers:
// docs/TOPOLOGY.md, "Which variant runs on which PCIe box").
const SizeTable& defaultTable(Fabric fabric, int world, bool two_islands = false,
                              FabricVerdict verdict = FabricVerdict::kUnknown);

// Whether a communicator lets auto pick the island algorithm where its islands allow it
// (autoIsland, plan/planner.h). On since the island kernel passed the GPU suite
// (2x H200, worlds 4/6/8 with ranks sharing GPUs); its thresholds are estimates until `tpcomm
// tune` measures a two-socket box. Forcing it (TPCOMM_ALGO=island) works either way.
constexpr bool kIslandAutoSelect = true;

// The algorithms that run over the host-memory transport (pinned host shared memory).
inline bool isHostAlgo(int a) {
  return a == tpcommAlgoHostOneShot || a == tpcommAlgoHostTwoShot || a == tpcommAlgoHostBulk;
}

// The pull variants over peer memory (peers read a rank's own outbox: pull_device.cuh).
inline bool isPullAlgo(int a) {
  return a == tpcommAlgoOneShotPull || a == tpcommAlgoTwoShotPull || a == tpcommAlgoIslandPull;
}

// The island algorithm, over push (island.cu) or pull (island_pull.cu): the same islands, worlds
// and segments.
inline bool isIslandAlgo(int a) {
  return a == tpcommAlgoIsland || a == tpcommAlgoIslandPull;
}

// The algorithms that only ever run when forced (TPCOMM_ALGO / config.algo): no built-in table
// names them, and a tuning-table row that does is not obeyed (auto falls back, saying why; their
// resources exist only when forced at init). oneshot_ce: the copy-engine one-shot, until a
// measurement or the fabric probe says where it wins.
inline bool isForcedOnlyAlgo(int a) {
  return a == tpcommAlgoOneShotCe;
}

Decision choose(const PolicyInput& in);

}  // namespace tpcomm
