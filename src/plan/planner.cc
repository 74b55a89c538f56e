#include "plan/planner.h"

#include <algorithm>
#include <cstdio>

#include "plan/rules.h"
#include "plan/tuning_table.h"

namespace tpcomm {
namespace {

// Bytes per step: `full` (what the slot layout holds), or less where a knob asks for shorter
// steps.
size_t stepBytes(int knob_bytes, size_t full) {
  const size_t knob = static_cast<size_t>(knob_bytes) / kVecBytes * kVecBytes;
  return knob > 0 ? std::min(knob, full) : full;
}

// A host_oneshot call takes the sentinel protocol where it fits one step of the host sentinel
// inboxes (that protocol has one step only: docs/PROTOCOL.md) and the knob allows it; else LL.
bool hostSentinel(const CommFacts& f, int algo, size_t bytes) {
  return algo == tpcommAlgoHostOneShot && f.knobs.host_sentinel &&
         bytes <= f.slots.host_sentinel_step_bytes;
}

// Vectors per step: the chunked algorithms' chunk, the one-shot's and host_bulk's step (knobs
// applied); 0 for the LL and sentinel one-shot over host memory, whose kernels take a whole slot
// region per step.
size_t chunkVecs(const CommFacts& f, int algo) {
  const SlotCapacity& s = f.slots;
  switch (algo) {
    case tpcommAlgoOneShot:
      return stepBytes(f.knobs.oneshot_step_bytes, s.oneshot_step_bytes) / kVecBytes;
    case tpcommAlgoOneShotCe:
      return s.ce_step_bytes / kVecBytes;
    case tpcommAlgoTwoShot:
      return s.twoshot_chunk_vecs;
    case tpcommAlgoHostTwoShot:
      return s.host_chunk_vecs;
    case tpcommAlgoIsland:
      return s.island_chunk_vecs;
    case tpcommAlgoHostBulk:
      return stepBytes(f.knobs.bulk_step_bytes, s.bulk_step_bytes) / kVecBytes;
    case tpcommAlgoOneShotPull:
      return stepBytes(f.knobs.oneshot_step_bytes, s.pull_step_bytes) / kVecBytes;
    case tpcommAlgoTwoShotPull:
      return s.pull_chunk_vecs;
    case tpcommAlgoIslandPull:
      return s.island_pull_chunk_vecs;
    default:
      return 0;
  }
}

tpcommVariant_t variantOf(int algo, bool sentinel, bool lean) {
  switch (algo) {
    case tpcommAlgoOneShot:
      return lean ? tpcommVariantP2pOneShotLean : tpcommVariantP2pOneShot;
    case tpcommAlgoTwoShot:
      return tpcommVariantP2pTwoShot;
    case tpcommAlgoIsland:
      return tpcommVariantIsland;
    case tpcommAlgoHostOneShot:
      if (!sentinel) return tpcommVariantHostOneShotLL;
      return lean ? tpcommVariantHostOneShotSentinelLean : tpcommVariantHostOneShotSentinel;
    case tpcommAlgoHostTwoShot:
      return tpcommVariantHostTwoShotLL;
    case tpcommAlgoHostBulk:
      return tpcommVariantHostBulk;
    case tpcommAlgoOneShotPull:
      return lean ? tpcommVariantP2pOneShotPullLean : tpcommVariantP2pOneShotPull;
    case tpcommAlgoTwoShotPull:
      return tpcommVariantP2pTwoShotPull;
    case tpcommAlgoOneShotCe:
      return tpcommVariantP2pOneShotCe;
    case tpcommAlgoIslandPull:
      return tpcommVariantIslandPull;
    case tpcommAlgoNccl:
      return ncclVariant();
  }
  return kNoVariant;
}

// Whether a oneshot_pull call of `bytes` may take the LL entries (oneshot_pull_ll.cu): the knob
// allows that size and an LL slot holds it. By size and knobs only, never by a rank's alignment:
// the LL and flag kernels do not pair, so every rank must take the same (the LL kernel takes any
// alignment and a partial last vector).
bool pullLLCandidate(const CommFacts& f, int algo, size_t bytes) {
  return algo == tpcommAlgoOneShotPull && bytes > 0 &&
         bytes <= static_cast<size_t>(f.knobs.pull_ll_bytes) && bytes <= f.slots.pull_ll_step_bytes;
}

}  // namespace

bool takesPullLL(const CallPlan& p) {
  return p.variant == tpcommVariantP2pOneShotPullLL;
}

void takeTuned(const WorldTable* tuned, CommFacts* f) {
  f->tuned = tuned ? &tuned->rules : nullptr;
  f->tuned_fused_twoshot_rows = tuned ? tuned->fused_twoshot_rows : 0;
  f->tuned_fused_unfused_below = tuned ? tuned->fused_unfused_below : 0;
  for (int c = 0; c < kWireCodecs; ++c) f->tuned_wire_from[c] = tuned ? tuned->wire_from[c] : 0;
}

int residentCap(const CommFacts& f) {
  return f.grid_caps && f.grid_caps->any() ? f.grid_caps->blocks : 0;
}

std::string coResidentNote(int blocks, const GridCaps& caps) {
  char buf[96];
  snprintf(buf, sizeof(buf), "capped at %d blocks: %d ranks share a GPU", blocks,
           caps.ranks_per_gpu);
  return buf;
}

void noteCappedGrid(const CommFacts& f, const GridPlan& g, std::string* reason) {
  if (g.co_resident_capped) *reason = coResidentNote(g.blocks, *f.grid_caps) + "; " + *reason;
}

bool fabricForTransport(int transport, Fabric agreed, Fabric* out) {
  *out = transport == 2 ? Fabric::kHost : agreed;
  return !(transport == 1 && agreed == Fabric::kHost);
}

namespace {

// A forced variant's transport is set up as a forced algorithm's is: without it the variant knob
// would refuse every call of a host or copy-engine row (forced_variant.cc, transportReady).
bool forcedOver(int forced_variant, VariantTransport transport) {
  const VariantRow* r = variantRow(forced_variant);
  return r && r->transport == transport;
}

}  // namespace

bool needsHostTransport(int world, Fabric fabric, int forced_algo, int forced_variant) {
  return world > 1 && (fabric == Fabric::kHost || isHostAlgo(forced_algo) ||
                       forcedOver(forced_variant, VariantTransport::kHost));
}

bool needsCeStaging(int forced_algo, int forced_variant) {
  return forced_algo == tpcommAlgoOneShotCe ||
         forcedOver(forced_variant, VariantTransport::kCopyEngine);
}

bool autoIsland(bool islands_found, Fabric fabric) {
  return kIslandAutoSelect && islands_found && fabric == Fabric::kPcie;
}

PolicyInput policyInputOf(const CommFacts& f, size_t bytes) {
  PolicyInput in;
  static_cast<PolicyFacts&>(in) = f;
  in.bytes = bytes;
  return in;
}

OneShotCall oneShotGeometry(const CommFacts& f, int algo, bool sentinel, size_t bytes,
                            size_t chunk_vecs, int blocks) {
  size_t region = 0;  // vectors of a source's whole region of a slot (host_bulk: an outbox slot)
  switch (algo) {
    case tpcommAlgoOneShot:
      region = f.slots.oneshot_step_bytes / kVecBytes;
      break;
    case tpcommAlgoHostOneShot:
      region = (sentinel ? f.slots.host_sentinel_step_bytes : f.slots.host_step_bytes) / kVecBytes;
      break;
    case tpcommAlgoHostBulk:
      region = f.slots.bulk_step_bytes / kVecBytes;
      break;
    case tpcommAlgoOneShotPull:
      region = f.slots.pull_step_bytes / kVecBytes;
      break;
    case tpcommAlgoOneShotCe:
      region = f.slots.ce_step_bytes / kVecBytes;
      break;
    default:
      return OneShotCall{};
  }
  const size_t nvec = (bytes + kVecBytes - 1) / kVecBytes;
  if (region == 0 || nvec == 0 || blocks < 1) return OneShotCall{};
  return oneShotCall(region, chunk_vecs, nvec, static_cast<unsigned>(blocks));
}

namespace {

// The host two-shot's form: its pulled row (the table's full-precision pull over the bulk
// outboxes: a flag per block and phase, 16 data bytes an entry) above the knob host_ll_bytes,
// where LL's flag word beside every data word would double what crosses PCIe; the LL entries up
// to it, where a step's two flag round trips cost more than the bytes. LL wherever the table has
// no such row or the outboxes hold no step.
tpcommVariant_t hostPullForm(const CommFacts& f, int algo, size_t bytes) {
  if (algo != tpcommAlgoHostTwoShot || bytes <= static_cast<size_t>(f.knobs.host_ll_bytes) ||
      f.slots.host_pull_chunk_vecs == 0)
    return kNoVariant;
  return allReduceRow(VariantTransport::kHost, /*pull=*/true, /*wire=*/0);
}

// The host two-shot's pulled form: the LL plan p's decision, launched as the pull two-shot.
CallPlan hostPullPlan(const CommFacts& f, const Call& call, tpcommVariant_t v, CallPlan p) {
  pullTwoShotLaunch(f, call, v, f.slots.host_pull_chunk_vecs, &p);
  const std::string ll = std::to_string(f.knobs.host_ll_bytes);
  p.decision.reason += "; pulled over the host outboxes (above host_ll_bytes=" + ll + ")";
  noteCappedGrid(f, p.grid, &p.decision.reason);
  return p;
}

}  // namespace

bool leanFits(const OneShotCall& geo, int blocks, int threads, const Call& call) {
  return call.aligned && call.bytes > 0 && call.bytes % kVecBytes == 0 && blocks >= 1 &&
         threads >= 1 && geo.nsteps == 1 && geo.per <= static_cast<size_t>(threads);
}

CallPlan allReduceRules(const CommFacts& f, const Call& call) {
  CallPlan p;
  p.decision = choose(policyInputOf(f, call.bytes));
  const int algo = p.decision.algo;
  if (p.decision.error != tpcommSuccess) return p;
  const bool sentinel = hostSentinel(f, algo, call.bytes);
  // Only the one-shots over peer memory (push and pull) and the host sentinel protocol have lean
  // kernels.
  const bool lean_set = algo == tpcommAlgoOneShot || algo == tpcommAlgoOneShotPull || sentinel;
  p.variant = variantOf(algo, sentinel, false);
  if (!isKernelVariant(p.variant)) return p;
  const tpcommVariant_t host_pull = hostPullForm(f, algo, call.bytes);
  if (host_pull != kNoVariant) return hostPullPlan(f, call, host_pull, p);

  p.chunk_vecs = chunkVecs(f, algo);
  const size_t step = algo != tpcommAlgoHostOneShot ? p.chunk_vecs * kVecBytes
                      : sentinel                    ? f.slots.host_sentinel_step_bytes
                                                    : f.slots.host_step_bytes;
  const tpcommVariant_t lean =
      lean_set && f.knobs.lean ? variantOf(algo, sentinel, true) : kNoVariant;
  const tpcommVariant_t ll =
      pullLLCandidate(f, algo, call.bytes) ? tpcommVariantP2pOneShotPullLL : kNoVariant;
  p.grid = planGrid(algo, call.bytes, step, f.world, f.knobs, residentCap(f));
  noteCappedGrid(f, p.grid, &p.decision.reason);
  p.pdl = f.knobs.pdl;
  p.aligned = call.aligned;
  p.geometry = oneShotGeometry(f, algo, sentinel, call.bytes, p.chunk_vecs, p.grid.blocks);
  // One step with a vector per thread, as the lean kernels: the same grid and geometry on every
  // rank (neither depends on alignment).
  if (ll != kNoVariant && p.geometry.nsteps == 1 &&
      p.geometry.per <= static_cast<size_t>(p.grid.threads)) {
    p.variant = ll;
    p.decision.reason +=
        "; LL entries (flag in the data: pull_ll_bytes=" + std::to_string(f.knobs.pull_ll_bytes) +
        ")";
  } else if (lean != kNoVariant && leanFits(p.geometry, p.grid.blocks, p.grid.threads, call)) {
    p.variant = lean;
  }
  p.threads = launchedThreads(p.variant, p.grid.threads);
  return p;
}

void pullTwoShotLaunch(const CommFacts& f, const Call& call, tpcommVariant_t v, size_t chunk_vecs,
                       CallPlan* p) {
  p->variant = v;
  p->chunk_vecs = chunk_vecs;
  // A thread owns whole groups (or vectors) of every segment: the pull two-shot's grid.
  p->grid = planGrid(tpcommAlgoTwoShotPull, call.bytes, chunk_vecs * kVecBytes, f.world, f.knobs,
                     residentCap(f));
  p->pdl = f.knobs.pdl;
  p->aligned = call.aligned;
  p->threads = launchedThreads(v, p->grid.threads);
}

// The lean kernels (and the pull LL one, built the same way) get one warp more than their vectors
// need: its last thread checks the peers' call fingerprints (oneshot_lean.cu) while the others
// wait for data, so the check adds no round trip to a thread that also reduces.
int launchedThreads(tpcommVariant_t variant, int grid_threads) {
  const VariantRow* r = variantRow(variant);
  const int extra = r ? r->extra_threads : 0;
  return extra > 0 && grid_threads + extra <= kThreadsPerBlock ? grid_threads + extra
                                                               : grid_threads;
}

Call fusedCall(size_t rows, size_t hidden, tpcommDataType_t dtype, bool fp8) {
  Call c;
  c.bytes = rows * hidden * dtypeSize(dtype);
  c.rows = rows;
  c.hidden = hidden;
  c.dtype = dtype;
  c.fp8 = fp8;
  return c;
}

Call allReduceCall(size_t bytes, bool aligned, tpcommDataType_t dtype) {
  Call c;
  c.bytes = bytes;
  c.aligned = aligned;
  c.dtype = dtype;
  return c;
}

CallPlan planCall(const CommFacts& f, const Call& call) {
  if (f.nodes > 1) return nodeRules(f, call);
  if (f.knobs.variant >= 0 && variantServes(f.knobs.variant, call))
    return forcedVariantRules(f, call);
  if (call.rows > 0) return fusedRules(f, call);
  if (call.collective != tpcommCollAllReduce) return rsagRules(f, call);
  return wireRules(f, call, allReduceRules(f, call));
}

}  // namespace tpcomm
