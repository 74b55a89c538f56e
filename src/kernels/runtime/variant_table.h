// The variant registry: one row per tpcommVariant_t, in enum order, holding what the library
// knows about a variant (its name, the collective it serves, the transport it moves data over,
// push or pull, its kernels and how they are launched). Names (tpcommVariantName, and through it
// python/tpcomm/_abi.py's test), the launch's kernel lookup and extra threads, the start-up image
// check (image_check.cc asks the runtime about every kernel of every row, so a kernel the library
// can launch cannot escape it) and the planner's variant queries read it here. A new variant is
// its enumerator (tpcomm.h), its row and its kernel-set getter's declaration (variant_table.cc),
// and its kernel file: the planner reaches it through its row (the wire's codec query, a forced
// variant=<name>), the Python package through tpcommVariantName.
#pragma once

#include "kernels/runtime/algo_launch.h"  // KernelSet
#include "tpcomm/tpcomm.h"

namespace tpcomm {

enum class VariantCollective {
  kNone,           // no variant (nothing ran), and NCCL (any collective)
  kAllReduce,      // tpcommAllReduce
  kFused,          // tpcommAllReduceAddRmsNorm in one kernel
  kEpilogue,       // the add + RMSNorm kernel after an all-reduce (the unfused path)
  kReduceScatter,  // tpcommReduceScatter
  kAllGather,      // tpcommAllGather
};

enum class VariantTransport {
  kNone,        // none: nothing ran; the epilogue reads only local memory
  kNccl,        // the NCCL fallback
  kPeer,        // peer GPU memory (NVLink, PCIe P2P), by the SMs
  kHost,        // pinned host shared memory
  kCopyEngine,  // peer GPU memory, by the copy engines (and a reduce kernel)
};

struct VariantRow {
  tpcommVariant_t id;
  const char* name;
  VariantCollective collective;
  VariantTransport transport;
  bool pull;                        // peers' data read by loads, not pushed by stores
  bool island;                      // the two-island hierarchical schedule (world 4 on)
  KernelSet (*kernels)(int world);  // nullptr: no tpcomm kernel (none, NCCL)
  bool lean_entries;                // the launch takes the set's lean entries, else the general
  int extra_threads;                // threads the plan adds to the grid's: the lean kernels'
                                    // fingerprint checker warp (oneshot_lean.cu)
  int wire = 0;  // the quantized wire's codec (kernels/layout/wire_codec.h, WireCodec); 0: none
};

// No variant: nothing ran, or the plan failed (the table's first row). The name the library's code
// uses for it, so that the enumerator's name stays in the table.
constexpr tpcommVariant_t kNoVariant = tpcommVariantNone;

// Every variant, row i being value i (tpcommNumVariants rows).
const VariantRow* variantRows(int* rows);
// The row of `variant`; nullptr outside the enum.
const VariantRow* variantRow(int variant);

// The row that hands a call to NCCL (its transport is VariantTransport::kNccl), and whether
// `variant` is it: the planners and the collectives ask the table, not the enumerator.
tpcommVariant_t ncclVariant();
bool isNcclVariant(int variant);
// The all-reduce row over `transport`, pulling or not, with the wire codec `wire` (0: full
// precision), where exactly one row is all of that; kNoVariant where none or several are (the
// one-shots and two-shots over peer memory share one description). The planner finds the
// quantized wire's rows and the host two-shot's pulled form by what they are, not by name.
tpcommVariant_t allReduceRow(VariantTransport transport, bool pull, int wire);
// Whether `variant` runs a tpcomm kernel (not none, not NCCL).
bool isKernelVariant(tpcommVariant_t variant);
// The fused all-reduce + add + RMSNorm kernels.
bool isFusedVariant(tpcommVariant_t variant);

// The kernel of `variant` for a world and datatype index (dtypeIndex); nullptr where none exists
// (no kernel: none, NCCL; the island kernels below world 4).
const void* variantKernel(tpcommVariant_t variant, int world, int dtype_index);
// The same row's cluster-per-row kernel (KernelSet::cluster: the fused one-shot over peer
// memory); nullptr for every other variant.
const void* variantClusterKernel(tpcommVariant_t variant, int world, int dtype_index);
// The same row's one-pass kernel (KernelSet::one_pass: the fused one-shot's block-per-row kernel
// for rows that fit the registers); nullptr for every other variant.
const void* variantOnePassKernel(tpcommVariant_t variant, int world, int dtype_index);

}  // namespace tpcomm
