// Launch knobs: how a call's grid is shaped and which kernel variants it may take. One set per
// communicator, identical on every rank (ranks' blocks pair up by index), from TPCOMM_KNOBS or
// tpcommConfig_t::launchKnobs ("name=value,..."; README, "Environment variables"). The defaults
// are the measured best (docs/BENCHMARKS.md, "Launch knobs"); the knobs exist for tpcomm-bench
// --sweep-knobs, `tpcomm tune` and the GPU tests that force a variant.
#pragma once

#include <string>

#include "topo/pcie_ordering.h"

namespace tpcomm {

enum HostFence { kHostFenceOff = 0, kHostFenceOn = 1, kHostFenceAuto = 2 };

struct LaunchKnobs {
  int block_bytes = 2048;        // target message bytes per block (per step; two-shot: per segment)
  int host_block_bytes = 1024;   // the same for the host-memory LL and sentinel one-shot/two-shot
  int bulk_block_bytes = 16384;  // the same for host_bulk (a fence and a flag per block and step)
  int oneshot_step_bytes = 1 << 20;  // one-shot over peer memory: message bytes per step at most
                                     // (0: a source's whole region of a slot)
  int bulk_step_bytes = 0;           // host_bulk: message bytes per step (0: a whole outbox slot)
  int max_blocks = 0;                // 0: kDefaultMaxBlocks (TPCOMM_MAX_BLOCKS, config.maxBlocks)
  int max_threads = 512;             // threads per block at most (the kernels' launch bound)
  int push_batch = 0;    // vectors a thread loads before storing them (1..4; 0: by size)
  bool pdl = true;       // programmatic dependent launch, sm_90+ (TPCOMM_PDL gives the default)
  int push_eighths = 2;  // multi-step one-shot: eighths of a block's threads that push (1..7)
  bool lean = true;      // single-step one-shot calls that fit it take the lean kernel
  bool host_sentinel = true;  // host_oneshot calls of one sentinel step take that protocol, not LL
  // oneshot_pull calls of one step up to this many bytes take LL entries, the flag in the data
  // (oneshot_pull_ll.cu; 0: never; at most an LL slot's 64 KiB). LL saves the flag's fence and
  // one round trip and doubles the bytes a rank reads, (world - 1) x 2 x the call. Over PCIe
  // (where auto pulls: ~27 GB/s of loads, a 1-2 us round trip) that breaks even near 30-50 KiB at
  // two ranks and 4-8 KiB at eight; 16 KiB keeps decode's 7168-wide bf16 row (14 KiB) on LL. An
  // estimate until measured (docs/BENCHMARKS.md, "Pull and copy-engine variants").
  int pull_ll_bytes = 16384;
  // host_twoshot calls up to this many bytes take LL entries (host_twoshot_ll: a flag word beside
  // every data word), larger ones the pulled form over the bulk outboxes (host_twoshot_pull: a
  // flag per block and phase, so half the bytes cross PCIe for the same data); 0: the pulled form
  // at every size. The default: docs/BENCHMARKS.md, "The host two-shot's pulled form".
  int host_ll_bytes = 262144;
  // 1: the fused kernel over peer memory spreads a row over a thread-block cluster where every
  // rank's GPU launches clusters (sm_90+), a cluster per row where the rows' clusters all fit
  // (fused_plan.cc). On: faster than a block per row at 1-16 rows (docs/BENCHMARKS.md, "Launch
  // knobs", fused_cluster).
  bool fused_cluster = true;
  // 1: a fused call whose all-reduce takes the pull LL entries takes them too
  // (fused_p2p_oneshot_pull_ll); 0: it takes the flag pull (fused_p2p_oneshot_pull) at every size.
  // On: with its fingerprint check in a block of its own, the LL kernel measured ahead of the
  // flag one at the decode sizes, on one shared H200; a real PCIe fabric, where LL also saves a
  // round trip, is not measured yet (docs/BENCHMARKS.md, "The numbers behind the defaults in the
  // code").
  bool fused_pull_ll = true;
  // Fused calls over pull of this many rows or more (twice as many at two ranks), and those
  // beyond one step of the pull one-shot, take the fused two-shot over pull
  // (fused_p2p_twoshot_pull: rows split among the ranks, only the residual crosses the fabric);
  // 0: never (beyond a step they go unfused); 1: always. -1 (unset): the crossover `tpcomm tune`
  // measured for the world (the tuning table's fused_twoshot_rows), else
  // kDefaultFusedTwoShotRows (fused_plan.cc says what it rests on).
  int fused_twoshot_rows = -1;
  // Where the all-reduce pushes, the fused two-shot's form: 0 the push form
  // (fused_twoshot_push.cu, the sentinel protocol) over PCIe within one step of the push
  // one-shot (beyond it the call runs unfused) and the pull form over NVLink; 1 the push form
  // wherever the all-reduce pushes, any number of steps (for measuring it, and forcing it by
  // name). 0: over NVLink the pull form measured ahead of the push form, and beyond the step the
  // push form behind the unfused pair (docs/BENCHMARKS.md, "The numbers behind the defaults in the
  // code").
  bool fused_twoshot_push = false;
  // Host-memory one-shot and two-shot readers fence at system scope after their clears, so the
  // host sentinel's clears are ordered before the peers' next pushes by the PTX memory model
  // rather than by PCIe write ordering (docs/PROTOCOL.md, "The host sentinel's clears"). 0 off,
  // 1 on, 2 auto: on unless the driver keeps a GPU's writes to host memory in PCIe order (no
  // Relaxed Ordering: topo/pcie_ordering.h), since the fence sits on the path between
  // back-to-back calls (docs/BENCHMARKS.md, "host_fence").
  int host_fence = kHostFenceAuto;
  // Communicators that span machines (plan/node_plan.h): all-reduces up to this many bytes take
  // the small shape (intra-node all-reduce, then NCCL on the whole message) where it is allowed;
  // 0: none does (every one large), 1073741824 (the most): every one up to 1 GiB. A guess, not
  // measured on a real cluster (docs/MULTINODE.md). It replaces node_variant (1 small, 2 large).
  int node_small_bytes = 65536;
  // variant=<name>: the calls of that variant's collective run it (a row of the variant table,
  // kernels/runtime/variant_table.h; "auto" or -1: the planner's choice), or fail with
  // tpcommUnsupported where it cannot take the call (plan/forced_variant.cc). A host-memory or
  // copy-engine row gets its transport at init, as a forced algorithm does (needsHostTransport,
  // needsCeStaging). For tests and measurements, as NCCL_SYM_KERNEL is NCCL's.
  int variant = -1;
  // The quantized wire (opt-in, never by default): wire=int8|int4|fp8|fp8_e5m2 (TPCOMM_WIRE sets
  // it too; kernels/layout/wire_codec.h, WireCodec; 0: none) carries all-reduces of
  // wire_min_bytes or more over PCIe peer memory in that codec (p2p_twoshot_pull_<codec>: a
  // fraction of the bytes, at a bounded error: docs/PROTOCOL.md, "The quantized wire's codec");
  // plan/wire_plan.cc says where. Never the fused call, reduce-scatter or all-gather.
  int wire = 0;
  int wire_min_bytes = 1 << 20;
};

// The wire codecs' names, as the knob takes them ("none" for 0); nullptr outside them.
const char* wireCodecName(int codec);

// The knobs that shape a call's plan, where they differ from the defaults, as "name=value,..."
// ("" for the defaults): what every rank of a communicator must agree on (comm/lifecycle/
// rank_info.cc). pdl is left out: it only marks a rank's own launches.
std::string planKnobsText(const LaunchKnobs& k);

// Why a set of knobs cannot be used ("" if it can), naming the first field out of range.
// threads_bound: the kernels' launch bound (kThreadsPerBlock).
std::string launchKnobsError(const LaunchKnobs& k, int threads_bound);

// Applies "name=value[,name=value...]" (names as the fields above; booleans 0/1) to *k; "" on
// success, else why (the unknown name or the bad value). max_blocks has its own setting
// (TPCOMM_MAX_BLOCKS, config.maxBlocks) and is not a knob here.
std::string parseLaunchKnobs(const std::string& spec, LaunchKnobs* k);

// Whether host-memory readers fence (the host_fence knob against what the driver does): auto
// fences unless the driver certainly sets no PCIe Relaxed Ordering.
bool hostFenceOn(int knob, const topo::PcieOrdering& ordering);

}  // namespace tpcomm
