#include "plan/fused_plan.h"

#include <algorithm>

#include "common/str_format.h"
#include "kernels/add_rmsnorm.h"
#include "kernels/fused_oneshot.h"
#include "kernels/layout/fused_twoshot_layout.h"
#include "plan/rules.h"

namespace tpcomm {
namespace {

constexpr int kFusedThreads = 512;  // kThreadsPerBlock: a row's vectors, 32 threads at least

// The all-reduce variants whose transport the fused kernels share: pushes or pulls over peer
// memory, and host memory.
bool overPeerMemory(tpcommVariant_t v, bool pull) {
  const VariantRow* r = variantRow(v);
  return r && r->collective == VariantCollective::kAllReduce &&
         r->transport == VariantTransport::kPeer && r->pull == pull;
}
bool overHostMemory(tpcommVariant_t v) {
  const VariantRow* r = variantRow(v);
  return r && r->collective == VariantCollective::kAllReduce &&
         r->transport == VariantTransport::kHost;
}

int worldClass(int world) {
  return world <= 2 ? 2 : world <= 4 ? 4 : 8;
}

// The grid of a fused call over peer memory where clusters may be used: blocks per row (a power
// of two up to kMaxClusterBlocks) and the threads of each, or a cluster of 1 with why not.
struct ClusterChoice {
  int cluster = 1;
  int threads = 0;
  const char* why_not = nullptr;
};

// Each block of a row's cluster moves about block_bytes of it (the plain one-shot's share per
// block), while the grid stays within max_blocks: at many rows the rows themselves fill the GPU
// and a cluster per row would only add barriers. The slice must fit the kernel's registers (it
// has no second pass). Ranks sharing a GPU launch no clusters (CommFacts::clusters is false:
// plan/co_residency.h says why).
ClusterChoice chooseCluster(const CommFacts& f, size_t rows, size_t row_bytes, size_t hv,
                            size_t max_blocks) {
  const auto blockPerRow = [](const char* why) {
    ClusterChoice c;
    c.why_not = why;
    return c;
  };
  if (!f.clusters) return blockPerRow(residentCap(f) > 0 ? "co-resident cap" : "no sm_90 clusters");
  if (!f.knobs.fused_cluster) return blockPerRow("fused_cluster=0");
  const size_t bb = static_cast<size_t>(std::max(f.knobs.block_bytes, 16));
  const size_t want = (row_bytes + bb - 1) / bb;
  int cs = 1;
  while (cs < kMaxClusterBlocks && static_cast<size_t>(cs) < want) cs *= 2;
  if (cs == 1) return blockPerRow("short rows");
  while (cs > 1 && rows * static_cast<size_t>(cs) > max_blocks) cs /= 2;
  if (cs == 1) return blockPerRow("many rows");
  const size_t per_thread = static_cast<size_t>(fusedVecsPerThread(worldClass(f.world)));
  // The cluster kernel's last warp is the fingerprint checker's (kFusedCheckerThreads): the data
  // threads are the block's others.
  constexpr int kDataThreads = kFusedThreads - kFusedCheckerThreads;
  const size_t slice = (hv + cs - 1) / cs;
  if (slice > static_cast<size_t>(kDataThreads) * per_thread) return blockPerRow("long rows");
  const int threads = static_cast<int>(std::min<size_t>(kDataThreads, (slice + 31) / 32 * 32)) +
                      kFusedCheckerThreads;
  return ClusterChoice{cs, threads, nullptr};
}

// The fused kernel's wire: the all-reduce's transport and protocol, one step of it (the pull
// two-shot and island: any number of steps).
enum class FusedWire {
  kNone,
  kPush,
  kPushTwoShot,
  kPushIsland,
  kPullLL,
  kPullFlag,
  kPullTwoShot,
  kPullIsland,
  kHost
};

// The pull wires' kernels (fused_pull.cu, fused_twoshot_pull.cu, fused_island_pull.cu): the
// one-pass path only, kFusedPullVecs a thread.
bool pulls(FusedWire w) {
  return w == FusedWire::kPullLL || w == FusedWire::kPullFlag || w == FusedWire::kPullTwoShot ||
         w == FusedWire::kPullIsland;
}
// The wires that split a call's rows among owners, in as many steps as it needs.
bool splitsRows(FusedWire w) {
  return w == FusedWire::kPullTwoShot || w == FusedWire::kPullIsland ||
         w == FusedWire::kPushTwoShot || w == FusedWire::kPushIsland;
}
// The kernels with the one-pass path only (kFusedPullVecs a thread): every wire that pulls or
// splits rows.
bool registersOnly(FusedWire w) {
  return pulls(w) || splitsRows(w);
}
// The longest row (in vectors) the pull kernels hold in registers: they have no second pass.
constexpr size_t kPullRowVecs = static_cast<size_t>(kFusedThreads) * kFusedPullVecs;

struct WireChoice {
  FusedWire wire = FusedWire::kNone;
  size_t cap = 0;         // the most bytes one step of the wire holds
  const char* what = "";  // for the reason
};

// The fused one-shot that shares the all-reduce's transport: over peer memory, pushes where the
// all-reduce pushes (its one-shot, two-shot or island), pulls where it pulls (the fabric probe's
// write-collapse verdict: a push would be slow there), with a flag per block, or the LL entries
// where the all-reduce takes them and the fused_pull_ll knob allows (plan/knobs.h says why it is
// off); or host memory with the host sentinel.
WireChoice oneShotWireOf(const CommFacts& f, const CallPlan& ar) {
  if (overHostMemory(ar.variant) && f.host_transport && f.knobs.host_sentinel)
    return {FusedWire::kHost, f.slots.host_sentinel_step_bytes, "host memory"};
  if (overPeerMemory(ar.variant, /*pull=*/false))
    return {FusedWire::kPush, f.slots.oneshot_step_bytes, "peer memory"};
  if (overPeerMemory(ar.variant, /*pull=*/true))
    return takesPullLL(ar) && f.knobs.fused_pull_ll
               ? WireChoice{FusedWire::kPullLL, f.slots.pull_ll_step_bytes,
                            "peer memory by pulls, LL entries"}
               : WireChoice{FusedWire::kPullFlag, f.slots.pull_step_bytes,
                            "peer memory by pulls, a flag per block"};
  return {};
}

// The row count from which a call within one step of the one-shot takes the two-shot (0: never):
// the knob where set (doubled at two ranks), else the tuning table's measured crossover for this
// world, else kDefaultFusedTwoShotRows: where the two-shot measured faster than the fused
// one-shot on one shared H200 (from 64 rows at 4 and 8 ranks, 128 at 2; docs/BENCHMARKS.md, "The
// numbers behind the defaults in the code").
constexpr size_t kDefaultFusedTwoShotRows = 64;
size_t twoShotRows(const CommFacts& f) {
  const int knob = f.knobs.fused_twoshot_rows;
  const size_t base = knob >= 0 ? static_cast<size_t>(knob) : kDefaultFusedTwoShotRows;
  if (knob < 0 && f.tuned_fused_twoshot_rows > 0) return f.tuned_fused_twoshot_rows;
  return base * (f.world == 2 && base > 1 ? 2 : 1);
}

// Calls of fused_twoshot_rows rows or more, and calls beyond one step of the one-shot, take the
// fused two-shot over pull (knobs.h): each rank reads (world - 1) / world of the call twice instead
// of (world - 1) times all of it, in as many steps as the call needs. Where the all-reduce pulls
// flat (not the island schedule, whose point is what crosses between the islands), and over
// NVLink where it pushes: loads hold NVLink's bandwidth (vLLM's custom all-reduce reads its peers'
// buffers there), and the two-shot over pull measured ahead of the push one-shot and the unfused
// pair from the same row counts. Over PCIe without the write-collapse verdict, where the
// all-reduce pushes, the two-shot's push form (fused_twoshot_push.cu) from the same row counts
// within one step of the push one-shot: its loads there are unmeasured, and its stores are what
// that fabric's all-reduce already runs on (the threshold is an estimate there: no healthy PCIe
// box has been lent; docs/BENCHMARKS.md, "The numbers behind the defaults in the code"). At two
// ranks each rank moves the call once either way (the one-shot: the peer's rows; the two-shot: half
// of them twice), so the two-shot pays off only at twice the rows.
//
// Where the all-reduce is an island (two islands: island_pull with the write-collapse verdict,
// the push island without), the fused call takes the island's own schedule by whole rows, at
// every size (fused_island_pull.cu, fused_twoshot_push.cu): what crosses the socket link stays
// the partial, once each way. (The islands' table runs the island above 1 MiB, where the fused
// one-shot's step, 1 MiB, no longer holds the call: before the push form, such calls ran
// unfused.)
WireChoice wireOf(const CommFacts& f, const CallPlan& ar, const Call& call, size_t bytes) {
  const WireChoice one = oneShotWireOf(f, ar);
  const VariantRow* row = variantRow(ar.variant);
  if (row && row->island && row->pull)  // island_pull
    return {FusedWire::kPullIsland, f.slots.pull_step_bytes,
            "island_pull's legs by whole rows (peer memory by pulls)"};
  if (row && row->island)  // the push island: a whole slot, 2m + 2 areas
    return {FusedWire::kPushIsland, 2 * f.slots.twoshot_chunk_vecs * kVecBytes,
            "the island's legs by whole rows (peer memory by pushes)"};
  const size_t at = twoShotRows(f);
  // Rows the two-shot cannot hold stay with the one-shot's wire (which says why, if it cannot).
  const size_t row_bytes = call.hidden * dtypeSize(call.dtype);
  const bool fits = row_bytes % kVecBytes == 0 && row_bytes / kVecBytes <= kPullRowVecs;
  if (!(pulls(one.wire) || one.wire == FusedWire::kPush) || !fits || at == 0 ||
      (call.rows < at && bytes <= one.cap))
    return one;
  // The push form within the push one-shot's step (beyond it the push form measured behind the
  // unfused pair: knobs.h, fused_twoshot_push), any steps with fused_twoshot_push=1.
  const bool push_form =
      f.knobs.fused_twoshot_push || (f.fabric != Fabric::kNvlink && bytes <= one.cap);
  if (one.wire == FusedWire::kPush && push_form)  // a whole slot, 2w areas
    return {FusedWire::kPushTwoShot, 2 * f.slots.twoshot_chunk_vecs * kVecBytes,
            "peer memory by pushes, rows split among the ranks"};
  if (one.wire == FusedWire::kPush && f.fabric != Fabric::kNvlink) return one;
  return {FusedWire::kPullTwoShot, f.slots.pull_step_bytes,
          "peer memory by pulls, rows split among the ranks"};
}

tpcommVariant_t fusedVariant(FusedWire w, bool fp8) {
  switch (w) {
    case FusedWire::kHost:
      return fp8 ? tpcommVariantFusedHostOneShotFp8 : tpcommVariantFusedHostOneShot;
    case FusedWire::kPush:
      return fp8 ? tpcommVariantFusedP2pOneShotFp8 : tpcommVariantFusedP2pOneShot;
    case FusedWire::kPushTwoShot:
      return fp8 ? tpcommVariantFusedP2pTwoShotFp8 : tpcommVariantFusedP2pTwoShot;
    case FusedWire::kPullLL:
      return fp8 ? tpcommVariantFusedP2pOneShotPullLLFp8 : tpcommVariantFusedP2pOneShotPullLL;
    case FusedWire::kPullFlag:
      return fp8 ? tpcommVariantFusedP2pOneShotPullFp8 : tpcommVariantFusedP2pOneShotPull;
    case FusedWire::kPullTwoShot:
      return fp8 ? tpcommVariantFusedP2pTwoShotPullFp8 : tpcommVariantFusedP2pTwoShotPull;
    case FusedWire::kPullIsland:
      return fp8 ? tpcommVariantFusedP2pIslandPullFp8 : tpcommVariantFusedP2pIslandPull;
    case FusedWire::kPushIsland:
      return fp8 ? tpcommVariantFusedP2pIslandFp8 : tpcommVariantFusedP2pIsland;
    case FusedWire::kNone:
      break;
  }
  return kNoVariant;
}

// The owners a wire splits a step's rows among (the ranks, or an island's members) and its steps.
bool islands(FusedWire w) {
  return w == FusedWire::kPullIsland || w == FusedWire::kPushIsland;
}
int owners(const CommFacts& f, FusedWire w) {
  return islands(w) ? f.world / 2 : f.world;
}
FusedTwoShotSteps rowSteps(const CommFacts& f, const WireChoice& w, size_t hv, size_t rows) {
  const int n = owners(f, w.wire);
  if (w.wire == FusedWire::kPullIsland) return fusedIslandSteps(w.cap / kVecBytes, hv, n, rows);
  // The push forms' slot: an RS and an AG area per owner, and the island's X
  // (fused_twoshot_push.cu).
  const bool push = w.wire == FusedWire::kPushTwoShot || w.wire == FusedWire::kPushIsland;
  const int areas = push ? fusedPushAreas(n, w.wire == FusedWire::kPushIsland) : n;
  return fusedRunSteps(w.cap / kVecBytes, hv, n, areas, rows);
}

// Why the fused kernel cannot take the call over wire w (empty: it can).
std::string whyNotFused(const CommFacts& f, const CallPlan& ar, const WireChoice& w,
                        const Call& call, size_t bytes) {
  const size_t es = dtypeSize(call.dtype), hv = call.hidden * es / kVecBytes;
  if (w.wire == FusedWire::kNone)
    return "the all-reduce goes to " + std::string(tpcommVariantName(ar.variant));
  if ((call.hidden * es) % kVecBytes != 0) return "rows are not whole 16-byte vectors";
  if (bytes > w.cap && !splitsRows(w.wire))
    return strFormat("%zu bytes exceed one step of the one-shot (%zu)", bytes, w.cap);
  if (registersOnly(w.wire) && hv > kPullRowVecs)
    return strFormat("rows of %zu vectors exceed the pull kernel's registers (%zu)", hv,
                     kPullRowVecs);
  if (splitsRows(w.wire) && rowSteps(f, w, hv, call.rows).area_rows == 0)
    return strFormat("a slot of %zu bytes cannot hold a row for each of its areas", w.cap);
  return "";
}

// The fused one-shots' kernels with a block per row (fused_oneshot.cu: pushes or host memory;
// fused_pull.cu: the LL wire) launch one more block, which checks the peers' fingerprints and
// carries no rows. Not the flag wire's: its checker checks between its publish and its await,
// where the peers' records have mostly arrived, and a check block measured no faster there
// (docs/BENCHMARKS.md, "The numbers behind the defaults in the code").
bool checkBlock(FusedWire w, int cluster) {
  return (w == FusedWire::kPush || w == FusedWire::kHost || w == FusedWire::kPullLL) &&
         cluster == 1;
}

// The fused kernel's grid over wire w: a cluster or a block per row (peer-memory pushes may use
// clusters), capped where ranks share a GPU, and the reason.
void fusedGrid(const CommFacts& f, const WireChoice& w, const Call& call, size_t bytes,
               EpiloguePlan* e) {
  const size_t es = dtypeSize(call.dtype), hv = call.hidden * es / kVecBytes;
  const size_t max_blocks =
      static_cast<size_t>(f.knobs.max_blocks > 0 ? f.knobs.max_blocks : kDefaultMaxBlocks);
  // Clusters over pushes only: the host and pull paths' reads cross the fabric, one at a time.
  const ClusterChoice cc = w.wire == FusedWire::kPush
                               ? chooseCluster(f, call.rows, call.hidden * es, hv, max_blocks)
                               : ClusterChoice{};
  e->cluster = cc.cluster;
  e->threads = cc.cluster > 1 ? cc.threads
                              : static_cast<int>(std::min<size_t>(
                                    kFusedThreads, std::max<size_t>(32, (hv + 31) / 32 * 32)));
  // A cluster per row, as many as the rows and the grid budget allow (the clusters loop over the
  // rows beyond); the two-shot's and the island's blocks take the rows of an owner's run of a
  // step (owners: the ranks, or an island's members).
  const size_t per = static_cast<size_t>(e->cluster);
  const FusedTwoShotSteps k = rowSteps(f, w, hv, call.rows);
  const size_t parts = static_cast<size_t>(owners(f, w.wire));
  const size_t unit_rows =
      splitsRows(w.wire) ? (std::min(call.rows, k.step_rows) + parts - 1) / parts : call.rows;
  size_t units = std::max<size_t>(1, std::min(unit_rows, std::max<size_t>(1, max_blocks / per)));
  // Ranks sharing a GPU: every rank's grid resident at once (plan/co_residency.h). The threads
  // follow the row, not the grid, so one cut suffices; the blocks loop over the other rows.
  const int fit = residentCap(f);
  const bool capped = fit > 0 && units * per > static_cast<size_t>(fit);
  if (capped) units = std::max<size_t>(1, static_cast<size_t>(fit) / per);
  // The fused one-shot with a block per row checks the fingerprints in a block of its own
  // (fused_oneshot.cu, fusedCheckBlock), beyond the grid budget (a soft bound) but within the
  // co-resident cap (a hard one); where the cap leaves no room, block 0's last thread checks them.
  e->check_block =
      checkBlock(w.wire, e->cluster) && (fit <= 0 || units * per + 1 <= static_cast<size_t>(fit));
  e->blocks = static_cast<int>(units * per + (e->check_block ? 1 : 0));
  const int vecs = registersOnly(w.wire) ? kFusedPullVecs : fusedVecsPerThread(worldClass(f.world));
  e->one_pass = e->cluster == 1 && hv <= static_cast<size_t>(e->threads) * vecs;
  e->region = w.cap / kVecBytes;
  e->pdl = f.knobs.pdl;
  // Short enough that the cluster and the cap notes fit tpcommCallInfo_t::reason too.
  e->reason = splitsRows(w.wire)
                  ? std::string(islands(w.wire) ? "fused island over " : "fused two-shot over ") +
                        w.what +
                        strFormat(" (%zu bytes, %zu step(s) of up to %zu rows)", bytes, k.nsteps,
                                  k.step_rows)
                  : std::string("fused one-shot over ") + w.what +
                        strFormat(" (%zu bytes, one step of %zu)", bytes, w.cap);
  if (e->cluster > 1)
    e->reason += strFormat("; rows over clusters of %d", e->cluster);
  else if (cc.why_not && w.wire == FusedWire::kPush)
    e->reason += strFormat("; a block per row (%s)", cc.why_not);
  if (capped) e->reason += "; " + coResidentNote(e->blocks, *f.grid_caps);
}

}  // namespace

tpcommVariant_t epilogueVariant(bool fp8) {
  return fp8 ? tpcommVariantAddRmsNormFp8 : tpcommVariantAddRmsNorm;
}

// The plan of the all-reduce of the same bytes (what the unfused path runs first), as for aligned
// buffers: no pointer enters a fused plan (a rank whose buffers are not aligned gives the fused
// kernel aligned stand-ins, comm/call/fused_staging.h). Its epilogue: the fused one-shot over the
// all-reduce's wire, or the epilogue kernel after the all-reduce.
CallPlan fusedRules(const CommFacts& f, const Call& call) {
  const size_t bytes = call.rows * call.hidden * dtypeSize(call.dtype);
  Call ar;
  ar.bytes = bytes;
  CallPlan p = allReduceRules(f, ar);
  EpiloguePlan& e = p.epilogue;
  if (p.decision.error != tpcommSuccess) {
    e.reason = p.decision.reason;
    return p;
  }
  // A machine's tuning table may have measured the pair faster at few rows (tpcomm tune).
  if (call.rows < f.tuned_fused_unfused_below) {
    unfusedAfter(f, call, p.variant,
                 "the tuning table measured that pair faster " +
                     (f.tuned_fused_unfused_below == SIZE_MAX
                          ? std::string("at every row count")
                          : strFormat("below %zu rows", f.tuned_fused_unfused_below)),
                 &e);
    return p;
  }
  const WireChoice w = wireOf(f, p, call, bytes);
  const std::string why_not = whyNotFused(f, p, w, call, bytes);
  if (why_not.empty() && bytes > 0) {
    e.variant = fusedVariant(w.wire, call.fp8);
    fusedGrid(f, w, call, bytes, &e);
    return p;
  }
  unfusedAfter(f, call, p.variant, why_not.empty() ? "nothing to reduce" : why_not, &e);
  return p;
}

void unfusedAfter(const CommFacts& f, const Call& call, tpcommVariant_t ar, const std::string& why,
                  EpiloguePlan* e) {
  epilogueAfter(f, call,
                "unfused: " + std::string(tpcommVariantName(ar)) + ", then the add+RMSNorm kernel" +
                    (why.empty() ? "" : " (" + why + ")"),
                e);
}

void epilogueAfter(const CommFacts& f, const Call& call, const std::string& why, EpiloguePlan* e) {
  *e = EpiloguePlan{};
  e->variant = epilogueVariant(call.fp8);
  e->reason = why;
  // The epilogue kernel's grid: a block per row (add_rmsnorm.h).
  const AddRmsNormGrid g =
      addRmsNormGrid(call.rows, call.hidden, dtypeSize(call.dtype), f.knobs.max_blocks);
  e->blocks = g.blocks;
  e->threads = g.threads;
}

}  // namespace tpcomm
