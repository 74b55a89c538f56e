#include "kernels/runtime/variant_table.h"

#include "kernels/layout/wire_codec.h"

namespace tpcomm {

// ---- the kernel-set getters the rows name, each defined in its kernel file (kernels/*.cu) ----
// Declared here, beside the rows, and nowhere else: a new variant is its enumerator (tpcomm.h),
// its row and getter here, and its kernel file. Kernels are built per world-size class (2, 4, 8
// ranks) so per-peer registers fit the class (kernels/device/kernel_set.cuh).

// The one-shot (oneshot.cu, with the lean kernels of oneshot_lean.cu and oneshot_pull_lean.cu):
// over peer memory (the sentinel protocol, or pulled), over host memory (LL; the sentinel
// protocol for single-step calls; bulk: outboxes, a flag per block and step).
KernelSet oneShotKernels(int world);
KernelSet pullOneShotKernels(int world);
KernelSet hostOneShotKernels(int world);
KernelSet hostSentinelKernels(int world);
KernelSet hostBulkKernels(int world);
// The one-step pull with the flag in the data (oneshot_pull_ll.cu).
KernelSet pullLLOneShotKernels(int world);
// The copy-engine one-shot's kernel (oneshot_ce.cu): the guard before a step's peer copies and
// the reduce after them, one kernel told apart by its operand (kernels/layout/ce_layout.h).
KernelSet oneShotCeKernels(int world);
// The two-shot (twoshot.cu: over peer memory, sentinel; over host memory, LL) and its pull form
// (twoshot_pull.cu: over peer memory, and over the host outboxes).
KernelSet twoShotKernels(int world);
KernelSet hostTwoShotKernels(int world);
KernelSet pullTwoShotKernels(int world);
KernelSet hostPullTwoShotKernels(int world);
// The two-shot over a quantized wire, a set per codec: pulled (twoshot_pull_wire.cu), pushed
// (twoshot_wire.cu), and over host outboxes (twoshot_pull_wire.cu).
KernelSet pullTwoShotInt8Kernels(int world);
KernelSet pullTwoShotInt4Kernels(int world);
KernelSet pullTwoShotFp8Kernels(int world);
KernelSet pullTwoShotFp8E5m2Kernels(int world);
KernelSet twoShotInt8Kernels(int world);
KernelSet twoShotInt4Kernels(int world);
KernelSet twoShotFp8Kernels(int world);
KernelSet twoShotFp8E5m2Kernels(int world);
KernelSet hostTwoShotInt8Kernels(int world);
KernelSet hostTwoShotInt4Kernels(int world);
KernelSet hostTwoShotFp8Kernels(int world);
KernelSet hostTwoShotFp8E5m2Kernels(int world);
// The hierarchical algorithm over peer memory, pushed (island.cu) and pulled (island_pull.cu):
// even worlds of at least 4, else all zero.
KernelSet islandKernels(int world);
KernelSet islandPullKernels(int world);
// Reduce-scatter and all-gather, the two-shot's halves (rsag.cu: over peer memory, sentinel;
// over host memory, LL; rsag_pull.cu: pulled).
KernelSet reduceScatterKernels(int world);
KernelSet allGatherKernels(int world);
KernelSet hostReduceScatterKernels(int world);
KernelSet hostAllGatherKernels(int world);
KernelSet pullReduceScatterKernels(int world);
KernelSet pullAllGatherKernels(int world);
// The fused all-reduce + add + RMSNorm, with the activation dtype's output or FP8 e4m3: the
// one-shot over peer memory (fused_oneshot.cu, with fused_cluster.cu's cluster kernels) and over
// host memory; pulled, with the flag in the data (LL) or a flag per block (fused_pull.cu); the
// two-shot pulled (fused_twoshot_pull.cu) and pushed (fused_twoshot_push.cu, with the island's);
// the island pulled (fused_island_pull.cu).
KernelSet fusedP2pKernels(int world);
KernelSet fusedP2pFp8Kernels(int world);
KernelSet fusedHostKernels(int world);
KernelSet fusedHostFp8Kernels(int world);
KernelSet fusedPullLLKernels(int world);
KernelSet fusedPullLLFp8Kernels(int world);
KernelSet fusedPullKernels(int world);
KernelSet fusedPullFp8Kernels(int world);
KernelSet fusedTwoShotPullKernels(int world);
KernelSet fusedTwoShotPullFp8Kernels(int world);
KernelSet fusedTwoShotPushKernels(int world);
KernelSet fusedTwoShotPushFp8Kernels(int world);
KernelSet fusedIslandPushKernels(int world);
KernelSet fusedIslandPushFp8Kernels(int world);
KernelSet fusedIslandPullKernels(int world);
KernelSet fusedIslandPullFp8Kernels(int world);
// The epilogue's add + RMSNorm after an unfused all-reduce (add_rmsnorm.cu); the same kernels
// at every world size.
KernelSet addRmsNormKernels(int world);
KernelSet addRmsNormFp8Kernels(int world);

namespace {

using C = VariantCollective;
using X = VariantTransport;
constexpr int kCheckerWarp = 32;
constexpr int kWireInt8 = static_cast<int>(WireCodec::kInt8);
constexpr int kWireInt4 = static_cast<int>(WireCodec::kInt4);
constexpr int kWireFp8 = static_cast<int>(WireCodec::kFp8E4M3);
constexpr int kWireFp8E5m2 = static_cast<int>(WireCodec::kFp8E5M2);

// clang-format off
constexpr VariantRow kRows[] = {
// id                                    name                          collective         transport       pull   island kernels                   lean   extra
{tpcommVariantNone,                    "none",                       C::kNone,          X::kNone,       false, false, nullptr,                  false, 0},
{tpcommVariantNccl,                    "nccl",                       C::kNone,          X::kNccl,       false, false, nullptr,                  false, 0},
{tpcommVariantP2pOneShotLean,          "p2p_oneshot_lean",           C::kAllReduce,     X::kPeer,       false, false, oneShotKernels,           true,  kCheckerWarp},
{tpcommVariantP2pOneShot,              "p2p_oneshot",                C::kAllReduce,     X::kPeer,       false, false, oneShotKernels,           false, 0},
{tpcommVariantP2pTwoShot,              "p2p_twoshot",                C::kAllReduce,     X::kPeer,       false, false, twoShotKernels,           false, 0},
{tpcommVariantIsland,                  "island",                     C::kAllReduce,     X::kPeer,       false, true,  islandKernels,            false, 0},
{tpcommVariantHostOneShotSentinelLean, "host_oneshot_sentinel_lean", C::kAllReduce,     X::kHost,       false, false, hostSentinelKernels,      true,  kCheckerWarp},
{tpcommVariantHostOneShotSentinel,     "host_oneshot_sentinel",      C::kAllReduce,     X::kHost,       false, false, hostSentinelKernels,      false, 0},
{tpcommVariantHostOneShotLL,           "host_oneshot_ll",            C::kAllReduce,     X::kHost,       false, false, hostOneShotKernels,       false, 0},
{tpcommVariantHostTwoShotLL,           "host_twoshot_ll",            C::kAllReduce,     X::kHost,       false, false, hostTwoShotKernels,       false, 0},
{tpcommVariantHostBulk,                "host_bulk",                  C::kAllReduce,     X::kHost,       false, false, hostBulkKernels,          false, 0},
{tpcommVariantFusedP2pOneShot,         "fused_p2p_oneshot",          C::kFused,         X::kPeer,       false, false, fusedP2pKernels,          false, 0},
{tpcommVariantFusedP2pOneShotFp8,      "fused_p2p_oneshot_fp8",      C::kFused,         X::kPeer,       false, false, fusedP2pFp8Kernels,       false, 0},
{tpcommVariantFusedHostOneShot,        "fused_host_oneshot",         C::kFused,         X::kHost,       false, false, fusedHostKernels,         false, 0},
{tpcommVariantFusedHostOneShotFp8,     "fused_host_oneshot_fp8",     C::kFused,         X::kHost,       false, false, fusedHostFp8Kernels,      false, 0},
{tpcommVariantAddRmsNorm,              "add_rmsnorm",                C::kEpilogue,      X::kNone,       false, false, addRmsNormKernels,        false, 0},
{tpcommVariantAddRmsNormFp8,           "add_rmsnorm_fp8",            C::kEpilogue,      X::kNone,       false, false, addRmsNormFp8Kernels,     false, 0},
{tpcommVariantP2pOneShotPullLean,      "p2p_oneshot_pull_lean",      C::kAllReduce,     X::kPeer,       true,  false, pullOneShotKernels,       true,  kCheckerWarp},
{tpcommVariantP2pOneShotPull,          "p2p_oneshot_pull",           C::kAllReduce,     X::kPeer,       true,  false, pullOneShotKernels,       false, 0},
{tpcommVariantP2pTwoShotPull,          "p2p_twoshot_pull",           C::kAllReduce,     X::kPeer,       true,  false, pullTwoShotKernels,       false, 0},
{tpcommVariantP2pOneShotCe,            "p2p_oneshot_ce",             C::kAllReduce,     X::kCopyEngine, false, false, oneShotCeKernels,         false, 0},
{tpcommVariantP2pReduceScatter,        "p2p_reduce_scatter",         C::kReduceScatter, X::kPeer,       false, false, reduceScatterKernels,     false, 0},
{tpcommVariantP2pAllGather,            "p2p_all_gather",             C::kAllGather,     X::kPeer,       false, false, allGatherKernels,         false, 0},
{tpcommVariantHostReduceScatter,       "host_reduce_scatter",        C::kReduceScatter, X::kHost,       false, false, hostReduceScatterKernels, false, 0},
{tpcommVariantHostAllGather,           "host_all_gather",            C::kAllGather,     X::kHost,       false, false, hostAllGatherKernels,     false, 0},
{tpcommVariantIslandPull,              "island_pull",                C::kAllReduce,     X::kPeer,       true,  true,  islandPullKernels,        false, 0},
{tpcommVariantP2pReduceScatterPull,    "p2p_reduce_scatter_pull",    C::kReduceScatter, X::kPeer,       true,  false, pullReduceScatterKernels, false, 0},
{tpcommVariantP2pAllGatherPull,        "p2p_all_gather_pull",        C::kAllGather,     X::kPeer,       true,  false, pullAllGatherKernels,     false, 0},
{tpcommVariantP2pOneShotPullLL,        "p2p_oneshot_pull_ll",        C::kAllReduce,     X::kPeer,       true,  false, pullLLOneShotKernels,     false, kCheckerWarp},
{tpcommVariantFusedP2pOneShotPullLL,   "fused_p2p_oneshot_pull_ll",  C::kFused,         X::kPeer,       true,  false, fusedPullLLKernels,       false, 0},
{tpcommVariantFusedP2pOneShotPullLLFp8,"fused_p2p_oneshot_pull_ll_fp8",C::kFused,        X::kPeer,       true,  false, fusedPullLLFp8Kernels,    false, 0},
{tpcommVariantFusedP2pOneShotPull,     "fused_p2p_oneshot_pull",     C::kFused,         X::kPeer,       true,  false, fusedPullKernels,         false, 0},
{tpcommVariantFusedP2pOneShotPullFp8,  "fused_p2p_oneshot_pull_fp8", C::kFused,         X::kPeer,       true,  false, fusedPullFp8Kernels,      false, 0},
{tpcommVariantFusedP2pTwoShotPull,     "fused_p2p_twoshot_pull",     C::kFused,         X::kPeer,       true,  false, fusedTwoShotPullKernels,  false, 0},
{tpcommVariantFusedP2pTwoShotPullFp8,  "fused_p2p_twoshot_pull_fp8", C::kFused,         X::kPeer,       true,  false, fusedTwoShotPullFp8Kernels, false, 0},
{tpcommVariantFusedP2pIslandPull,      "fused_p2p_island_pull",      C::kFused,         X::kPeer,       true,  true,  fusedIslandPullKernels,   false, 0},
{tpcommVariantFusedP2pIslandPullFp8,   "fused_p2p_island_pull_fp8",  C::kFused,         X::kPeer,       true,  true,  fusedIslandPullFp8Kernels, false, 0},
{tpcommVariantFusedP2pTwoShot,         "fused_p2p_twoshot",          C::kFused,         X::kPeer,       false, false, fusedTwoShotPushKernels,  false, 0},
{tpcommVariantFusedP2pTwoShotFp8,      "fused_p2p_twoshot_fp8",      C::kFused,         X::kPeer,       false, false, fusedTwoShotPushFp8Kernels, false, 0},
{tpcommVariantFusedP2pIsland,          "fused_p2p_island",           C::kFused,         X::kPeer,       false, true,  fusedIslandPushKernels,   false, 0},
{tpcommVariantFusedP2pIslandFp8,       "fused_p2p_island_fp8",       C::kFused,         X::kPeer,       false, true,  fusedIslandPushFp8Kernels, false, 0},
{tpcommVariantP2pTwoShotPullInt8,      "p2p_twoshot_pull_int8",      C::kAllReduce,     X::kPeer,       true,  false, pullTwoShotInt8Kernels,   false, 0, kWireInt8},
{tpcommVariantP2pTwoShotPullInt4,      "p2p_twoshot_pull_int4",      C::kAllReduce,     X::kPeer,       true,  false, pullTwoShotInt4Kernels,   false, 0, kWireInt4},
{tpcommVariantP2pTwoShotPullFp8,       "p2p_twoshot_pull_fp8",       C::kAllReduce,     X::kPeer,       true,  false, pullTwoShotFp8Kernels,    false, 0, kWireFp8},
{tpcommVariantP2pTwoShotPullFp8E5m2,   "p2p_twoshot_pull_fp8_e5m2",  C::kAllReduce,     X::kPeer,       true,  false, pullTwoShotFp8E5m2Kernels, false, 0, kWireFp8E5m2},
{tpcommVariantP2pTwoShotInt8,           "p2p_twoshot_int8",           C::kAllReduce,     X::kPeer,       false, false, twoShotInt8Kernels,       false, 0, kWireInt8},
{tpcommVariantP2pTwoShotInt4,           "p2p_twoshot_int4",           C::kAllReduce,     X::kPeer,       false, false, twoShotInt4Kernels,       false, 0, kWireInt4},
{tpcommVariantP2pTwoShotFp8,            "p2p_twoshot_fp8",            C::kAllReduce,     X::kPeer,       false, false, twoShotFp8Kernels,        false, 0, kWireFp8},
{tpcommVariantP2pTwoShotFp8E5m2,        "p2p_twoshot_fp8_e5m2",       C::kAllReduce,     X::kPeer,       false, false, twoShotFp8E5m2Kernels,    false, 0, kWireFp8E5m2},
{tpcommVariantHostTwoShotInt8,          "host_twoshot_int8",          C::kAllReduce,     X::kHost,       true,  false, hostTwoShotInt8Kernels,   false, 0, kWireInt8},
{tpcommVariantHostTwoShotInt4,          "host_twoshot_int4",          C::kAllReduce,     X::kHost,       true,  false, hostTwoShotInt4Kernels,   false, 0, kWireInt4},
{tpcommVariantHostTwoShotFp8,           "host_twoshot_fp8",           C::kAllReduce,     X::kHost,       true,  false, hostTwoShotFp8Kernels,    false, 0, kWireFp8},
{tpcommVariantHostTwoShotFp8E5m2,       "host_twoshot_fp8_e5m2",      C::kAllReduce,     X::kHost,       true,  false, hostTwoShotFp8E5m2Kernels, false, 0, kWireFp8E5m2},
{tpcommVariantHostTwoShotPull,          "host_twoshot_pull",          C::kAllReduce,     X::kHost,       true,  false, hostPullTwoShotKernels,   false, 0},
};
// clang-format on

constexpr int kNumRows = static_cast<int>(sizeof(kRows) / sizeof(kRows[0]));

// Row i is value i, and every value has a row: the header's enum and this table cannot drift.
constexpr bool rowsInEnumOrder() {
  for (int i = 0; i < kNumRows; ++i)
    if (static_cast<int>(kRows[i].id) != i) return false;
  return true;
}
static_assert(kNumRows == tpcommNumVariants, "a tpcommVariant_t value without a registry row");
static_assert(rowsInEnumOrder(), "the registry's rows must follow tpcommVariant_t's values");

}  // namespace

const VariantRow* variantRows(int* rows) {
  *rows = kNumRows;
  return kRows;
}

const VariantRow* variantRow(int variant) {
  return variant >= 0 && variant < kNumRows ? &kRows[variant] : nullptr;
}

tpcommVariant_t ncclVariant() {
  for (const VariantRow& r : kRows)
    if (r.transport == VariantTransport::kNccl) return r.id;
  return kNoVariant;  // unreachable: the table has its NCCL row
}

bool isNcclVariant(int variant) {
  const VariantRow* r = variantRow(variant);
  return r && r->transport == VariantTransport::kNccl;
}

tpcommVariant_t allReduceRow(VariantTransport transport, bool pull, int wire) {
  tpcommVariant_t found = kNoVariant;
  for (const VariantRow& r : kRows) {
    if (r.collective != VariantCollective::kAllReduce || r.transport != transport ||
        r.pull != pull || r.wire != wire)
      continue;
    if (found != kNoVariant) return kNoVariant;  // several: the description names none of them
    found = r.id;
  }
  return found;
}

bool isKernelVariant(tpcommVariant_t variant) {
  const VariantRow* r = variantRow(variant);
  return r && r->kernels;
}

bool isFusedVariant(tpcommVariant_t variant) {
  const VariantRow* r = variantRow(variant);
  return r && r->collective == VariantCollective::kFused;
}

namespace {

// The row, where the variant runs a kernel and the datatype index is in range.
const VariantRow* kernelRow(tpcommVariant_t variant, int dtype_index) {
  const VariantRow* r = variantRow(variant);
  return r && r->kernels && dtype_index >= 0 && dtype_index < kNumDtypes ? r : nullptr;
}

}  // namespace

const void* variantKernel(tpcommVariant_t variant, int world, int dtype_index) {
  const VariantRow* r = kernelRow(variant, dtype_index);
  if (!r) return nullptr;
  const KernelSet set = r->kernels(world);
  return r->lean_entries ? set.lean[dtype_index] : set.fn[dtype_index];
}

const void* variantOnePassKernel(tpcommVariant_t variant, int world, int dtype_index) {
  const VariantRow* r = kernelRow(variant, dtype_index);
  return r ? r->kernels(world).one_pass[dtype_index] : nullptr;
}

const void* variantClusterKernel(tpcommVariant_t variant, int world, int dtype_index) {
  const VariantRow* r = kernelRow(variant, dtype_index);
  return r ? r->kernels(world).cluster[dtype_index] : nullptr;
}

}  // namespace tpcomm
