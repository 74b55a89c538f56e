// The one table from a planned variant (tpcommVariant_t, chosen by src/plan/planner.cc) to its
// kernels: the launch looks a call's kernel up here, and the start-up image check
// (image_check.cc) asks the runtime about every kernel of every row, so a kernel the library can
// launch cannot escape the check. A new variant is a new row (and a kernel-set getter).
#pragma once

#include "kernels/algo_launch.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

struct VariantKernels {
  tpcommVariant_t variant;
  KernelSet (*kernels)(int world);  // a getter of algo_launch.h
  bool lean;                        // the set's lean entries, else its general ones
};

// Every variant that runs a tpcomm kernel (not None, not NCCL), once.
const VariantKernels* variantTable(int* rows);
// The row of `variant`; nullptr when it runs no tpcomm kernel.
const VariantKernels* variantRow(tpcommVariant_t variant);
// The kernel of `variant` for a world and datatype index (dtypeIndex); nullptr where none exists
// (the island kernels below world 4).
const void* variantKernel(tpcommVariant_t variant, int world, int dtype_index);
// The same row's cluster-per-row kernel (KernelSet::cluster: the fused one-shot over peer
// memory); nullptr for every other variant.
const void* variantClusterKernel(tpcommVariant_t variant, int world, int dtype_index);
// The same row's one-pass kernel (KernelSet::one_pass: the fused one-shot's block-per-row kernel
// for rows that fit the registers); nullptr for every other variant.
const void* variantOnePassKernel(tpcommVariant_t variant, int world, int dtype_index);

}  // namespace tpcomm
