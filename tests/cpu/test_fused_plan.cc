// The planner's answer for tpcommAllReduceAddRmsNorm (src/plan/fused_plan.cc): the fused one-shot
// over the all-reduce's transport where the whole call is one step of whole-vector rows, the
// all-reduce then the epilogue kernel elsewhere, with the reason; every variant it names has its
// kernels in the variant table (so the start-up image check covers them).
#include <gtest/gtest.h>

#include <string>

#include "kernels/add_rmsnorm.h"
#include "kernels/fused_oneshot.h"
#include "kernels/runtime/algo_launch.h"
#include "kernels/runtime/occupancy.h"
#include "kernels/runtime/variant_table.h"
#include "plan/fused_plan.h"
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

// The blocks that own rows (the fused one-shot's check block owns none).
int rowBlocks(const EpiloguePlan& p) {
  return p.blocks - (p.check_block ? 1 : 0);
}

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

struct Row {
  int world;
  Fabric fabric;
  size_t rows, hidden;
  tpcommDataType_t dt;
  bool fp8;
  tpcommVariant_t want;
};

TEST(FusedPlan, FusedWhereOneStepOfWholeRowsElseUnfused) {
  const Row cases[] = {
      // One 7168-wide bf16 row (14 KiB) and prefill-sized calls up to a step (8 MiB at world 2).
      {2, Fabric::kNvlink, 1, 7168, tpcommBfloat16, false, tpcommVariantFusedP2pOneShot},
      {2, Fabric::kNvlink, 256, 16384, tpcommBfloat16, false, tpcommVariantFusedP2pOneShot},
      {2, Fabric::kNvlink, 16, 7168, tpcommBfloat16, true, tpcommVariantFusedP2pOneShotFp8},
      {8, Fabric::kPcie, 4, 4096, tpcommFloat16, false, tpcommVariantFusedP2pOneShot},
      // Beyond one step (the region is 8 MiB at world 2, 2 MiB at world 8): the fused two-shot
      // over pull where its registers hold the row (test_fused_twoshot_plan.cc), else unfused.
      {2, Fabric::kNvlink, 257, 16384, tpcommBfloat16, false, tpcommVariantAddRmsNorm},
      {8, Fabric::kNvlink, 256, 8192, tpcommBfloat16, true, tpcommVariantFusedP2pTwoShotPullFp8},
      // Rows that are not whole vectors: unfused. (Buffer alignment is no input: a rank with
      // unaligned buffers stages them, comm/call/fused_staging.h; Fused.MixedAlignmentAcrossRanks.)
      {2, Fabric::kNvlink, 3, 1001, tpcommBfloat16, false, tpcommVariantAddRmsNorm},
      {2, Fabric::kNvlink, 3, 7168, tpcommBfloat16, false, tpcommVariantFusedP2pOneShot},
      {2, Fabric::kNvlink, 3, 6, tpcommFloat32, false, tpcommVariantAddRmsNorm},
      // Host memory: the host sentinel protocol's one step (512 KiB at world 2).
      {2, Fabric::kHost, 16, 7168, tpcommBfloat16, false, tpcommVariantFusedHostOneShot},
      {2, Fabric::kHost, 4, 7168, tpcommBfloat16, true, tpcommVariantFusedHostOneShotFp8},
      {2, Fabric::kHost, 64, 7168, tpcommBfloat16, false, tpcommVariantAddRmsNorm},
  };
  for (const Row& r : cases) {
    const CommFacts f = factsFor(r.world, r.fabric);
    const CallPlan plan = planCall(f, fusedCall(r.rows, r.hidden, r.dt, r.fp8));
    const EpiloguePlan& p = plan.epilogue;
    const std::string what = "world " + std::to_string(r.world) + " " + std::to_string(r.rows) +
                             "x" + std::to_string(r.hidden) + ": " + p.reason;
    EXPECT_EQ(p.variant, r.want) << what;
    EXPECT_EQ(isFusedVariant(p.variant), p.reason.rfind("fused ", 0) == 0) << what;
    if (isFusedVariant(p.variant)) {
      EXPECT_GE(rowBlocks(p), 1) << what;
      EXPECT_LE(static_cast<size_t>(rowBlocks(p)), r.rows) << what;
      // The one-shots with a block per row check in a block of its own (pushes, host memory,
      // pulls over LL entries).
      const bool one_shot = p.variant == tpcommVariantFusedP2pOneShot ||
                            p.variant == tpcommVariantFusedP2pOneShotFp8 ||
                            p.variant == tpcommVariantFusedHostOneShot ||
                            p.variant == tpcommVariantFusedHostOneShotFp8 ||
                            p.variant == tpcommVariantFusedP2pOneShotPullLL ||
                            p.variant == tpcommVariantFusedP2pOneShotPullLLFp8;
      EXPECT_EQ(p.check_block, one_shot && p.cluster == 1) << what;
      EXPECT_GE(p.threads, 32) << what;
      EXPECT_LE(p.threads, kThreadsPerBlock) << what;
      EXPECT_EQ(p.threads % 32, 0) << what;
      EXPECT_GT(p.region, 0u) << what;
      // The whole call fits one source's region.
      EXPECT_LE(r.rows * r.hidden * (r.dt == tpcommFloat32 ? 4 : 2), p.region * kVecBytes);
    } else {
      EXPECT_EQ(p.reason.rfind("unfused: ", 0), 0u) << what;
      EXPECT_NE(p.reason.find(tpcommVariantName(plan.variant)), std::string::npos) << what;
    }
  }
}

// A block a row up to the block budget, and the check block beyond it (fused_oneshot.cu: the
// budget is a soft bound, and a row block given to the check would cost a second row's time).
TEST(FusedPlan, GridFollowsTheRowsAndTheBlockCap) {
  CommFacts f = factsFor(2, Fabric::kNvlink);
  EpiloguePlan p = planCall(f, fusedCall(1, 7168, tpcommBfloat16, false)).epilogue;
  EXPECT_TRUE(p.check_block);
  EXPECT_EQ(p.blocks, 2);     // the row's block and the check block
  EXPECT_EQ(p.threads, 512);  // 896 vectors: two per thread
  p = planCall(f, fusedCall(4, 128, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(p.blocks, 5);
  EXPECT_EQ(p.threads, 32);        // 16 vectors a row
  f.knobs.fused_twoshot_rows = 0;  // the one-shot at 256 rows
  p = planCall(f, fusedCall(256, 4096, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(p.blocks, 129);  // kDefaultMaxBlocks: the blocks loop over the rows beyond it
  f.knobs.max_blocks = 8;
  p = planCall(f, fusedCall(256, 4096, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(p.blocks, 9);
  // Ranks sharing a GPU: capped by occupancy (test_co_residency.cc).
}

// What the cluster geometry must hold whatever the choice: whole clusters of a power of two up to
// kMaxClusterBlocks, no more clusters than rows, every slice within the registers of its block.
void expectClusterGeometry(const EpiloguePlan& p, const CommFacts& f, const Call& c,
                           const std::string& what) {
  ASSERT_TRUE(isFusedVariant(p.variant)) << what;
  EXPECT_GE(p.cluster, 1) << what;
  EXPECT_LE(p.cluster, kMaxClusterBlocks) << what;
  EXPECT_EQ(p.cluster & (p.cluster - 1), 0) << what;
  EXPECT_EQ(p.blocks % p.cluster, 0) << what;
  // A cluster owns one row (fused_cluster.cu); a block per row may loop over rows.
  if (p.cluster > 1) {
    EXPECT_EQ(static_cast<size_t>(p.blocks / p.cluster), c.rows) << what;
  } else {
    EXPECT_LE(static_cast<size_t>(rowBlocks(p)), c.rows) << what;
  }
  EXPECT_EQ(p.threads % 32, 0) << what;
  EXPECT_LE(p.threads, kThreadsPerBlock) << what;
  if (p.cluster == 1) return;
  const size_t hv = c.hidden * (c.dtype == tpcommFloat32 ? 4 : 2) / kVecBytes;
  const size_t slice = (hv + p.cluster - 1) / p.cluster;
  const int wc = f.world <= 2 ? 2 : f.world <= 4 ? 4 : 8;
  // The cluster kernel's last warp is the fingerprint checker's; the others carry the slice.
  const size_t data_threads = static_cast<size_t>(p.threads) - kFusedCheckerThreads;
  EXPECT_LE(slice, data_threads * fusedVecsPerThread(wc)) << what;
  EXPECT_LT(data_threads, slice + 32) << what;  // no idle data warp
}

struct ClusterRow {
  int world;
  size_t rows, hidden;
  tpcommDataType_t dt;
  int cluster, blocks, threads;
  const char* says;  // in the reason
};

// sm_90+ everywhere: a row over a cluster of blocks of about block_bytes (2 KiB) each, a power of
// two up to 8, within the grid budget (128 blocks: more rows, smaller clusters, then a block per
// row again). H not a multiple of the cluster: the last block's slice is shorter.
TEST(FusedPlan, ClusterPerRowFollowsTheRowAndTheGridBudget) {
  const ClusterRow cases[] = {
      // Cluster threads: the slice's (rounded to warps, at most 480) and the checker's warp. A
      // block per row: its blocks and the check block.
      {2, 1, 7168, tpcommBfloat16, 8, 8, 160, "rows over clusters of 8"},  // 896 vectors: 112 each
      {2, 16, 7168, tpcommBfloat16, 8, 128, 160, "rows over clusters of 8"},
      {2, 17, 7168, tpcommBfloat16, 4, 68, 256, "rows over clusters of 4"},
      {2, 64, 7168, tpcommBfloat16, 2, 128, 480, "rows over clusters of 2"},
      {2, 128, 7168, tpcommBfloat16, 1, 129, 512, "a block per row (many rows)"},
      {2, 256, 7168, tpcommBfloat16, 1, 129, 512, "a block per row (many rows)"},
      {2, 1, 4096, tpcommBfloat16, 4, 4, 160, "rows over clusters of 4"},
      {2, 1, 6144, tpcommBfloat16, 8, 8, 128, "rows over clusters of 8"},
      {2, 1, 8192, tpcommBfloat16, 8, 8, 160, "rows over clusters of 8"},
      {2, 1, 16384, tpcommBfloat16, 8, 8, 288, "rows over clusters of 8"},
      {2, 1, 16384, tpcommFloat32, 8, 8, 512, "rows over clusters of 8"},       // 512: 480 x 2
      {2, 1, 61440, tpcommBfloat16, 8, 8, 512, "rows over clusters of 8"},      // 960: 480 x 2
      {2, 1, 61448, tpcommBfloat16, 1, 2, 512, "a block per row (long rows)"},  // 961 beyond
      {8, 3, 7176, tpcommFloat16, 8, 24, 160, "rows over clusters of 8"},  // 897 vectors: 113 ...
      {4, 2, 2056, tpcommBfloat16, 4, 8, 128, "rows over clusters of 4"},  // 257: 65, 65, 65, 62
      {2, 1, 1024, tpcommBfloat16, 1, 2, 128, "a block per row (short rows)"},
      {2, 4, 128, tpcommBfloat16, 1, 5, 32, "a block per row (short rows)"},
      // Slices beyond the registers (8 x 1024 vectors at world 8): a block per row, two passes.
      {8, 1, 65544, tpcommBfloat16, 1, 2, 512, "a block per row (long rows)"},
  };
  for (const ClusterRow& r : cases) {
    CommFacts f = factsFor(r.world, Fabric::kNvlink);
    f.clusters = true;
    f.knobs.fused_cluster = true;    // the default
    f.knobs.fused_twoshot_rows = 0;  // the push one-shot's geometry at every row count
    const Call call = fusedCall(r.rows, r.hidden, r.dt, false);
    const EpiloguePlan p = planCall(f, call).epilogue;
    const std::string what = "world " + std::to_string(r.world) + " " + std::to_string(r.rows) +
                             "x" + std::to_string(r.hidden) + ": " + p.reason;
    ASSERT_EQ(p.variant, tpcommVariantFusedP2pOneShot) << what;
    EXPECT_EQ(p.cluster, r.cluster) << what;
    EXPECT_EQ(p.blocks, r.blocks) << what;
    EXPECT_EQ(p.threads, r.threads) << what;
    EXPECT_NE(p.reason.find(r.says), std::string::npos) << what;
    expectClusterGeometry(p, f, call, what);
    // FP8 output: the same geometry.
    const EpiloguePlan q = planCall(f, fusedCall(r.rows, r.hidden, r.dt, true)).epilogue;
    EXPECT_EQ(q.variant, tpcommVariantFusedP2pOneShotFp8) << what;
    EXPECT_EQ(q.cluster, p.cluster) << what;
    EXPECT_EQ(q.blocks, p.blocks) << what;
  }
}

// A block per row where clusters cannot or must not be used, and the reason says which.
TEST(FusedPlan, BlockPerRowWithoutClustersAndSaysWhy) {
  CommFacts f = factsFor(2, Fabric::kNvlink);
  const Call call = fusedCall(1, 7168, tpcommBfloat16, false);
  EpiloguePlan p = planCall(f, call).epilogue;  // some rank's GPU below sm_90 (or the query failed)
  EXPECT_EQ(p.cluster, 1);
  EXPECT_EQ(p.blocks, 2);  // the row's and the check block
  EXPECT_EQ(p.threads, 512);
  EXPECT_NE(p.reason.find("a block per row (no sm_90 clusters)"), std::string::npos) << p.reason;
  f.clusters = true;
  p = planCall(f, call).epilogue;  // the default: a cluster per row where clusters launch
  EXPECT_EQ(p.cluster, 8) << p.reason;
  EXPECT_EQ(p.blocks, 8) << p.reason;
  ASSERT_EQ(parseLaunchKnobs("fused_cluster=0", &f.knobs), "");
  p = planCall(f, call).epilogue;
  EXPECT_EQ(p.cluster, 1);
  EXPECT_EQ(p.blocks, 2);
  EXPECT_NE(p.reason.find("a block per row (fused_cluster=0)"), std::string::npos) << p.reason;
  ASSERT_EQ(parseLaunchKnobs("fused_cluster=1", &f.knobs), "");
  EXPECT_EQ(planCall(f, call).epilogue.cluster, 8);
  // The block budget (TPCOMM_MAX_BLOCKS) bounds rows x cluster.
  f.knobs.max_blocks = 8;
  p = planCall(f, fusedCall(2, 7168, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(p.cluster, 4) << p.reason;
  EXPECT_EQ(p.blocks, 8) << p.reason;
  p = planCall(f, fusedCall(256, 7168, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(p.cluster, 1) << p.reason;
  EXPECT_EQ(p.blocks, 8) << p.reason;
  // Host memory keeps a block per row (its reads cross PCIe), and says nothing of clusters.
  CommFacts h = factsFor(2, Fabric::kHost);
  h.clusters = true;
  p = planCall(h, call).epilogue;
  ASSERT_EQ(p.variant, tpcommVariantFusedHostOneShot) << p.reason;
  EXPECT_EQ(p.cluster, 1);
  EXPECT_EQ(p.reason.find("cluster"), std::string::npos) << p.reason;
}

// A block per row whose rows fit the registers (threads x fusedVecsPerThread vectors) takes the
// one-pass kernel; longer rows and clusters the others.
TEST(FusedPlan, OnePassKernelWhereTheRowsFitTheRegisters) {
  struct Case {
    int world;
    size_t hidden;
    Fabric fabric;
    bool clusters;
    bool one_pass;
  };
  const Case cases[] = {
      {2, 7168, Fabric::kNvlink, false, true},    // 896 vectors <= 512 x 2
      {2, 8192, Fabric::kNvlink, false, true},    // 1024: the edge
      {2, 8200, Fabric::kNvlink, false, false},   // 1025: two passes
      {2, 16384, Fabric::kNvlink, false, false},  // 2048
      {8, 4096, Fabric::kNvlink, false, true},    // 512 <= 512 x 1 at world class 8
      {8, 7168, Fabric::kNvlink, false, false},  {2, 7168, Fabric::kHost, false, true},
      {2, 7168, Fabric::kNvlink, true, false},  // a cluster per row: the cluster kernel
  };
  for (const Case& c : cases) {
    CommFacts f = factsFor(c.world, c.fabric);
    f.clusters = c.clusters;
    f.knobs.fused_cluster = c.clusters;
    const EpiloguePlan p = planCall(f, fusedCall(2, c.hidden, tpcommBfloat16, false)).epilogue;
    ASSERT_TRUE(isFusedVariant(p.variant)) << p.reason;
    EXPECT_EQ(p.one_pass, c.one_pass)
        << "world " << c.world << " H " << c.hidden << ": " << p.reason;
    if (c.clusters) {
      EXPECT_GT(p.cluster, 1) << p.reason;
    }
  }
}

// Ranks sharing a GPU launch no clusters (init clears CommFacts::clusters: a cluster needs free
// SMs of one GPC, which the co-residency cap cannot promise), and the reason says why; the rows'
// blocks are cut to the cap.
TEST(FusedPlan, NoClustersWhereRanksShareAGpu) {
  CommFacts f = factsFor(8, Fabric::kNvlink);
  f.clusters = true;
  f.knobs.fused_cluster = true;
  const Call one = fusedCall(1, 7168, tpcommBfloat16, false);
  EXPECT_GT(planCall(f, one).epilogue.cluster, 1);  // a GPU each
  GridCaps caps;
  caps.ranks_per_gpu = 8;
  caps.blocks = 6;
  f.grid_caps = &caps;
  f.clusters = false;  // as comm/lifecycle/fabric.cc leaves it
  EpiloguePlan p = planCall(f, one).epilogue;
  EXPECT_EQ(p.cluster, 1) << p.reason;
  EXPECT_EQ(p.blocks, 2) << p.reason;  // within the cap: the check block too
  EXPECT_TRUE(p.check_block) << p.reason;
  EXPECT_NE(p.reason.find("a block per row (co-resident cap)"), std::string::npos) << p.reason;
  p = planCall(f, fusedCall(16, 7168, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(p.cluster, 1) << p.reason;
  EXPECT_EQ(p.blocks, 6) << p.reason;  // the cap leaves no room: block 0's last thread checks
  EXPECT_FALSE(p.check_block) << p.reason;
  EXPECT_NE(p.reason.find("capped at 6 blocks: 8 ranks share a GPU"), std::string::npos)
      << p.reason;
}

// The epilogue kernel takes a block per row on every GPU (its cluster form lost to it and is
// gone): clusters or not, the unfused plan names none, and the knob that asked for them is
// refused with why.
TEST(EpiloguePlan, ABlockPerRowAndTheClusterKnobIsGone) {
  CommFacts f = factsFor(2, Fabric::kNvlink, tpcommAlgoNccl);
  for (bool clusters : {false, true}) {
    f.clusters = clusters;
    const EpiloguePlan p = planCall(f, fusedCall(1, 7168, tpcommBfloat16, false)).epilogue;
    ASSERT_EQ(p.variant, tpcommVariantAddRmsNorm) << p.reason;
    EXPECT_EQ(p.cluster, 1) << p.reason;
    EXPECT_EQ(p.blocks, 1) << p.reason;
    EXPECT_EQ(p.threads, 512) << p.reason;  // 896 vectors: the bound, two a thread
    EXPECT_EQ(p.reason.find("clusters"), std::string::npos) << p.reason;
  }
  const std::string why = parseLaunchKnobs("epilogue_cluster=1", &f.knobs);
  EXPECT_NE(why.find("epilogue_cluster is gone"), std::string::npos) << why;
}

TEST(FusedPlan, NcclServedAllReduceStaysUnfusedAndErrorsPropagate) {
  CommFacts f = factsFor(2, Fabric::kNvlink, tpcommAlgoNccl);
  CallPlan p = planCall(f, fusedCall(1, 7168, tpcommBfloat16, false));
  EXPECT_EQ(p.variant, tpcommVariantNccl);
  EXPECT_EQ(p.epilogue.variant, tpcommVariantAddRmsNorm) << p.epilogue.reason;
  EXPECT_NE(p.epilogue.reason.find("nccl"), std::string::npos) << p.epilogue.reason;
  f.nccl_available = false;
  p = planCall(f, fusedCall(1, 7168, tpcommBfloat16, false));
  EXPECT_NE(p.decision.error, tpcommSuccess);
  EXPECT_EQ(p.epilogue.variant, tpcommVariantNone);
}

TEST(FusedPlan, EveryVariantItNamesHasKernels) {
  for (tpcommVariant_t v : {tpcommVariantFusedP2pOneShot, tpcommVariantFusedP2pOneShotFp8,
                            tpcommVariantFusedHostOneShot, tpcommVariantFusedHostOneShotFp8,
                            tpcommVariantAddRmsNorm, tpcommVariantAddRmsNormFp8})
    for (int w : kWorldClasses)
      for (int d = 0; d < kNumDtypes; ++d)
        EXPECT_NE(variantKernel(v, w, d), nullptr) << tpcommVariantName(v) << " world " << w;
  // The cluster kernels ride in the peer-memory rows only.
  for (int w : kWorldClasses)
    for (int d = 0; d < kNumDtypes; ++d) {
      EXPECT_NE(variantClusterKernel(tpcommVariantFusedP2pOneShot, w, d), nullptr);
      EXPECT_NE(variantClusterKernel(tpcommVariantFusedP2pOneShotFp8, w, d), nullptr);
      EXPECT_NE(variantClusterKernel(tpcommVariantFusedP2pOneShot, w, d),
                variantKernel(tpcommVariantFusedP2pOneShot, w, d));
      EXPECT_EQ(variantClusterKernel(tpcommVariantFusedHostOneShot, w, d), nullptr);
      EXPECT_EQ(variantClusterKernel(tpcommVariantP2pOneShot, w, d), nullptr);
    }
}

// host_sentinel=0 turns the sentinel protocol off, and with it the fused host one-shot that runs
// on it: the call runs unfused after the host all-reduce.
TEST(FusedPlan, HostSentinelOffRunsTheHostCallUnfused) {
  CommFacts f = factsFor(2, Fabric::kHost);
  f.knobs.host_sentinel = false;
  const EpiloguePlan e = planCall(f, fusedCall(16, 7168, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(e.variant, tpcommVariantAddRmsNorm) << e.reason;
  EXPECT_EQ(e.reason.rfind("unfused: host_oneshot_ll, then the add+RMSNorm kernel", 0), 0u)
      << e.reason;
}

}  // namespace
}  // namespace tpcomm
