// The call planner: the one function that decides how a call runs. From the communicator's facts
// (world, fabric, what exists, the slot layout, the knobs) and the call (collective, bytes,
// alignment, the fused call's shapes) it gives the algorithm (the policy, plan/policy.h), the
// variant (which kernel, or NCCL), the grid, the step and the one-shot geometry, the fused call's
// epilogue, a spanning call's legs, and the reason. Pure C++ (no CUDA calls), identical on every
// rank, so the CPU tests check every decision; every collective, its Explain, `tpcomm doctor` and
// `tpcomm tune` ask it. Its rules by call kind live beside it (plan/rules.h).
#pragma once

#include <cstddef>
#include <string>

#include "kernels/layout/oneshot_layout.h"
#include "kernels/layout/wire_codec.h"  // kWireCodecs
#include "kernels/runtime/algo_launch.h"
#include "kernels/runtime/variant_table.h"
#include "plan/co_residency.h"
#include "plan/grid.h"
#include "plan/knobs.h"
#include "plan/node_plan.h"
#include "plan/policy.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

// What a communicator knows once created (comm/lifecycle/init.cc, comm/lifecycle/fabric.cc): what
// the policy reads (PolicyFacts: world, fabric, islands, NCCL, host transport, CE slots, forced
// algorithm, strict, tuning table, the fabric probe's verdict), and what the rules read besides.
struct CommFacts : PolicyFacts {
  SlotCapacity slots;  // what one step of each slot layout holds
  LaunchKnobs knobs;   // TPCOMM_KNOBS / config.launchKnobs, max_blocks, pdl
  // Where ranks share a GPU, the most blocks every rank's grid may have so that all of them are
  // resident at once (plan/co_residency.h, agreed at init); nullptr: every rank has its own GPU.
  const GridCaps* grid_caps = nullptr;
  // Every rank's GPU launches thread-block clusters (kernels/runtime/occupancy.h, agreed at init):
  // the fused call may spread a row over a cluster, the same on every rank.
  bool clusters = false;
  // A communicator whose ranks span machines (comm/node/node_link.h): nodes > 1, world is then the
  // ranks of this machine, and node_contiguous whether each machine's ranks are consecutive
  // global ranks (comm/node/node_layout.h). Its calls run as legs (plan/node_plan.h).
  int nodes = 1;
  bool node_contiguous = true;
  // The tuning table's fused_twoshot_rows for this world (plan/tuning_table.h), where the table
  // steers the communicator: 0 none, SIZE_MAX the two-shot only beyond a step.
  size_t tuned_fused_twoshot_rows = 0;
  // Its fused_unfused_below: fused calls of fewer rows run unfused (0 none, SIZE_MAX all).
  size_t tuned_fused_unfused_below = 0;
  // Its wire_from, per WireCodec (index 0 unused): an opted-in all-reduce of fewer bytes keeps the
  // full-precision wire (plan/wire_plan.cc); 0 not measured, SIZE_MAX slower at every size.
  size_t tuned_wire_from[kWireCodecs] = {};
};

struct WorldTable;  // plan/tuning_table.h

// The tuning table's entry for this world (null: none steers it) into the facts: its rules
// (PolicyFacts::tuned) and the tuned_* fields. The communicator and doctor's preview both fill
// their facts through it, so a field the table gains reaches both.
void takeTuned(const WorldTable* tuned, CommFacts* f);

// A call, as every rank knows it: no pointer enters the plan (one rank's alignment would make the
// ranks run different calls where the plan depended on it; aligned only picks among kernels that
// take the same slots, see leanFits).
struct Call {
  size_t bytes = 0;     // the message (reduce-scatter / all-gather: world x the count's bytes)
  bool aligned = true;  // send and recv (and a half's runs) are 16-byte aligned
  tpcommColl_t collective = tpcommCollAllReduce;
  // tpcommAllReduceAddRmsNorm when rows > 0: the all-reduce of rows x hidden elements of dtype
  // (bytes), then the add+RMSNorm epilogue, with FP8 output when fp8. A spanning call's dtype sets
  // its legs' element counts.
  size_t rows = 0;
  size_t hidden = 0;
  tpcommDataType_t dtype = tpcommBfloat16;
  bool fp8 = false;
  // The all-reduce's own quantized wire (tpcommAllReduceWire): -1 the communicator's (the wire
  // knob), 0 none, else a WireCodec (kernels/layout/wire_codec.h).
  int wire = -1;

  bool operator==(const Call& o) const {
    return bytes == o.bytes && aligned == o.aligned && collective == o.collective &&
           rows == o.rows && hidden == o.hidden && dtype == o.dtype && fp8 == o.fp8 &&
           wire == o.wire;
  }
};

// The Call of a tpcommAllReduceAddRmsNorm of these shapes (its bytes: rows x hidden x element).
Call fusedCall(size_t rows, size_t hidden, tpcommDataType_t dtype, bool fp8);
// The Call of a tpcommAllReduce (its datatype: the quantized wire's groups are elements).
Call allReduceCall(size_t bytes, bool aligned, tpcommDataType_t dtype);

// A fused call's (Call::rows > 0) kernel: the fused one-shot variant that runs the whole call, or
// the epilogue kernel that follows the all-reduce planned in CallPlan.
struct EpiloguePlan {
  tpcommVariant_t variant = kNoVariant;  // None when the all-reduce's plan failed
  int blocks = 0;                        // the grid (the fused kernel's, or the epilogue's)
  int threads = 0;
  // Blocks per row; above 1, thread-block clusters of that many blocks each own a row (blocks =
  // clusters * cluster), a slice of it per block (kernels/fused_cluster.cu, add_rmsnorm.cu).
  int cluster = 1;
  // Fused variants with a block per row whose rows fit the registers: the one-pass kernel.
  bool one_pass = false;
  // The fused one-shot with a block per row: the grid's last block checks the fingerprints and
  // carries no rows (kernels/fused_oneshot.cu), so blocks is the row blocks + 1.
  bool check_block = false;
  size_t region = 0;  // fused variants: vectors of a source's region of a slot
  bool pdl = false;
  std::string reason;
};

// A spanning call's (CommFacts::nodes > 1) legs; CallPlan's other fields are then its first
// intra-node leg's plan (NCCL where a machine has one rank), what the last-call info names.
struct NodeLegs {
  NodeShape shape = NodeShape::kLarge;
  tpcommResult_t error = tpcommSuccess;  // the shape's refusal (decision.error is then the same)
  std::string why;                       // the shape's reason, or the refusal
  std::string text;                      // the legs as Explain names them (nodeLegsText)
};

struct CallPlan {
  Decision decision;  // the algorithm, fallback, error and reason (the policy's answer)
  tpcommVariant_t variant = kNoVariant;  // None when decision.error is set
  // The rest only for variants that run a tpcomm kernel:
  GridPlan grid;
  // Threads as launched: grid.threads, and the row's extra warp (VariantRow::extra_threads: the
  // lean kernels' fingerprint checker) where the block has room for it.
  int threads = 0;
  bool pdl = false;
  bool aligned = true;     // Call::aligned (the kernels take it as LaunchParams::aligned)
  size_t chunk_vecs = 0;   // vectors per step at most (host LL one-shot: 0, a whole slot region)
  OneShotCall geometry{};  // one-shot variants (all zero for the chunked ones)
  EpiloguePlan epilogue;   // fused calls only
  NodeLegs node;           // spanning calls only
};

// The rules a communicator's facts come from (comm/lifecycle/init.cc, comm/lifecycle/fabric.cc),
// shared with `tpcomm doctor`'s preview so the two cannot disagree: TPCOMM_TRANSPORT (0 auto, 1
// p2p, 2 host) applied to the fabric the ranks agree on; false when it cannot be (p2p asked for,
// but P2P does not work).
bool fabricForTransport(int transport, Fabric agreed, Fabric* out);
// Whether a communicator sets up the host-memory transport: no working P2P, or a host algorithm
// or a host-memory variant forced (the algo setting; the variant knob, -1 for none).
// TPCOMM_TRANSPORT=host makes the fabric kHost.
bool needsHostTransport(int world, Fabric fabric, int forced_algo, int forced_variant = -1);
// Whether a communicator allocates the copy-engine variant's landing slots (oneshot_ce.cu): only
// when that algorithm or variant is forced at init, since auto never picks it (plan/policy.cc).
bool needsCeStaging(int forced_algo, int forced_variant = -1);
// Whether auto may pick the island algorithm: real islands in the topology, over PCIe.
bool autoIsland(bool islands_found, Fabric fabric);

// The quantized wire's form by fabric (plan/wire_plan.cc), shared with `tpcomm tune`, which
// measures it: the two-shot algorithm that runs the codec where the policy hands a large
// all-reduce to NCCL, or to any large host algorithm: host_twoshot over host memory, twoshot_pull
// over PCIe whose peer writes collapse (the probe's verdict), twoshot over other PCIe; Auto over
// NVLink, where the wire never runs by itself.
int wireFormOf(Fabric fabric, FabricVerdict verdict);

// The policy's input for a call of `bytes` on a communicator with these facts.
PolicyInput policyInputOf(const CommFacts& f, size_t bytes);

// The one planner: every call of every collective, on every communicator.
CallPlan planCall(const CommFacts& f, const Call& call);

// The geometry a one-shot call (oneshot, host_oneshot with `sentinel` or LL, host_bulk) runs
// with: the region of a slot its transport gives a source (an outbox slot for host_bulk), steps
// of at most chunk_vecs (0: the region), the share of each of `blocks`. All zero for the other
// algorithms. What the kernels read from LaunchParams::call_*.
OneShotCall oneShotGeometry(const CommFacts& f, int algo, bool sentinel, size_t bytes,
                            size_t chunk_vecs, int blocks);

// Whether a call of that geometry and grid can run a lean kernel, which has no step loop, no tail
// and no batch loop: one step of whole vectors in aligned buffers, a vector per thread at most.
bool leanFits(const OneShotCall& geo, int blocks, int threads, const Call& call);

// The most blocks any grid of this communicator may have (GridCaps::blocks, where ranks share a
// GPU), or 0 where nothing caps them. One number for every variant and thread count: the grids of
// different calls are resident together (plan/co_residency.h).
int residentCap(const CommFacts& f);

// What a reason says when the co-residency cap (CommFacts::grid_caps) cut a grid: "capped at N
// blocks: K ranks share a GPU". An all-reduce's reason starts with it (the policy's reasons can
// fill tpcommCallInfo_t::reason on their own), a fused call's ends with it.
std::string coResidentNote(int blocks, const GridCaps& caps);
// The note put first in `reason` where grid g was capped (the all-reduce's and the halves' plans).
void noteCappedGrid(const CommFacts& f, const GridPlan& g, std::string* reason);

}  // namespace tpcomm
