#include "kernels/variant_table.h"

#include "kernels/add_rmsnorm.h"
#include "kernels/fused_oneshot.h"

namespace tpcomm {
namespace {

constexpr VariantKernels kTable[] = {
    {tpcommVariantP2pOneShotLean, oneShotKernels, true},
    {tpcommVariantP2pOneShot, oneShotKernels, false},
    {tpcommVariantP2pTwoShot, twoShotKernels, false},
    {tpcommVariantIsland, islandKernels, false},
    {tpcommVariantHostOneShotSentinelLean, hostSentinelKernels, true},
    {tpcommVariantHostOneShotSentinel, hostSentinelKernels, false},
    {tpcommVariantHostOneShotLL, hostOneShotKernels, false},
    {tpcommVariantHostTwoShotLL, hostTwoShotKernels, false},
    {tpcommVariantHostBulk, hostBulkKernels, false},
    {tpcommVariantFusedP2pOneShot, fusedP2pKernels, false},
    {tpcommVariantFusedP2pOneShotFp8, fusedP2pFp8Kernels, false},
    {tpcommVariantFusedHostOneShot, fusedHostKernels, false},
    {tpcommVariantFusedHostOneShotFp8, fusedHostFp8Kernels, false},
    {tpcommVariantAddRmsNorm, addRmsNormKernels, false},
    {tpcommVariantAddRmsNormFp8, addRmsNormFp8Kernels, false},
    {tpcommVariantP2pOneShotPullLean, pullOneShotKernels, true},
    {tpcommVariantP2pOneShotPull, pullOneShotKernels, false},
    {tpcommVariantP2pTwoShotPull, pullTwoShotKernels, false},
    {tpcommVariantP2pOneShotCe, oneShotCeKernels, false},
    {tpcommVariantP2pReduceScatter, reduceScatterKernels, false},
    {tpcommVariantP2pAllGather, allGatherKernels, false},
    {tpcommVariantHostReduceScatter, hostReduceScatterKernels, false},
    {tpcommVariantHostAllGather, hostAllGatherKernels, false},
    {tpcommVariantIslandPull, islandPullKernels, false},
    {tpcommVariantP2pReduceScatterPull, pullReduceScatterKernels, false},
    {tpcommVariantP2pAllGatherPull, pullAllGatherKernels, false},
    {tpcommVariantP2pOneShotPullLL, pullLLOneShotKernels, false},
};

}  // namespace

const VariantKernels* variantTable(int* rows) {
  *rows = static_cast<int>(sizeof(kTable) / sizeof(kTable[0]));
  return kTable;
}

const VariantKernels* variantRow(tpcommVariant_t variant) {
  for (const VariantKernels& r : kTable)
    if (r.variant == variant) return &r;
  return nullptr;
}

const void* variantKernel(tpcommVariant_t variant, int world, int dtype_index) {
  const VariantKernels* r = variantRow(variant);
  if (!r || dtype_index < 0 || dtype_index >= kNumDtypes) return nullptr;
  const KernelSet set = r->kernels(world);
  return r->lean ? set.lean[dtype_index] : set.fn[dtype_index];
}

const void* variantOnePassKernel(tpcommVariant_t variant, int world, int dtype_index) {
  const VariantKernels* r = variantRow(variant);
  if (!r || dtype_index < 0 || dtype_index >= kNumDtypes) return nullptr;
  return r->kernels(world).one_pass[dtype_index];
}

const void* variantClusterKernel(tpcommVariant_t variant, int world, int dtype_index) {
  const VariantKernels* r = variantRow(variant);
  if (!r || dtype_index < 0 || dtype_index >= kNumDtypes) return nullptr;
  return r->kernels(world).cluster[dtype_index];
}

}  // namespace tpcomm
