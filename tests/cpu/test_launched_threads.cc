// The plan's threads are the launched threads (issue 34: the launch decides nothing): for every
// kernel row the planner gives, the launch arguments carry CallPlan::threads as they are, and
// those threads are the grid's plus the row's extra warp (the lean and pull LL kernels' checker)
// where the block has room, never above the kernels' launch bound, with a data thread for every
// vector of a one-step call, and the kernel's LaunchParams argument carries the rest of the plan.
// The fused call's epilogue kernel is planned the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "comm/call/call_common.h"
#include "kernels/add_rmsnorm.h"
#include "plan/fused_plan.h"
#include "support/plan_facts.h"

namespace tpcomm {
namespace {

constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;

void expectLaunchedAsPlanned(const CallPlan& p, const std::string& what) {
  const VariantRow* row = variantRow(p.variant);
  ASSERT_NE(row, nullptr) << what;
  const LaunchArgs a = launchArgsOf(p, nullptr, nullptr, 0, tpcommBfloat16);
  EXPECT_EQ(a.threads, p.threads) << what;
  EXPECT_EQ(a.blocks, p.grid.blocks) << what;
  EXPECT_LE(p.threads, kThreadsPerBlock) << what;
  const int extra = row->extra_threads;
  const bool room = p.grid.threads + extra <= kThreadsPerBlock;
  EXPECT_EQ(p.threads, p.grid.threads + (room ? extra : 0)) << what;
  if (row->lean_entries || extra > 0) {  // one step: a vector per data thread
    EXPECT_LE(p.geometry.per, static_cast<size_t>(p.grid.threads)) << what;
  }
  // The kernel's LaunchParams argument carries the plan's geometry, batch, split and alignment.
  const LaunchParams l = launchParamsOf(a);
  EXPECT_EQ(l.call_region, p.geometry.region) << what;
  EXPECT_EQ(l.call_nsteps, p.geometry.nsteps) << what;
  EXPECT_EQ(l.call_per, p.geometry.per) << what;
  EXPECT_EQ(l.push_batch, p.grid.push_batch) << what;
  EXPECT_EQ(l.push_eighths, p.grid.push_eighths) << what;
  EXPECT_EQ(l.aligned != 0, p.aligned) << what;
}

TEST(LaunchedThreads, EveryRowLaunchesThePlansThreads) {
  std::set<int> seen;
  const Fabric fabrics[] = {Fabric::kNvlink, Fabric::kPcie, Fabric::kHost};
  const size_t sizes[] = {16,         1 * kKiB, 4 * kKiB, 14 * kKiB, 64 * kKiB,
                          256 * kKiB, 1 * kMiB, 8 * kMiB, 64 * kMiB};
  for (int world : {2, 4, 8})
    for (Fabric fabric : fabrics)
      for (int algo = -1; algo < tpcommNumAlgos; ++algo)
        for (bool islands : {false, true})
          for (size_t bytes : sizes)
            for (tpcommColl_t coll :
                 {tpcommCollAllReduce, tpcommCollReduceScatter, tpcommCollAllGather}) {
              CommFacts f = factsFor(world, fabric, algo);
              f.two_islands = islands && world >= 4;
              // The quantized wire's rows: opted in (every codec) or not.
              for (int wire = 0; wire <= 4; ++wire)
                for (bool aligned : {true, false}) {  // unaligned: the general kernels
                  f.knobs.wire = wire;
                  const CallPlan p = planCall(f, Call{bytes, aligned, coll});
                  if (p.decision.error != tpcommSuccess || !isKernelVariant(p.variant)) continue;
                  seen.insert(p.variant);
                  expectLaunchedAsPlanned(p, std::string(tpcommVariantName(p.variant)) + " world " +
                                                 std::to_string(world) + " " +
                                                 std::to_string(bytes) + " B");
                }
            }
  // The sweep reaches every row that serves these collectives with a kernel.
  int rows = 0;
  const VariantRow* all = variantRows(&rows);
  for (int i = 0; i < rows; ++i) {
    const VariantRow& r = all[i];
    if (!r.kernels || r.collective == VariantCollective::kEpilogue ||
        isFusedVariant(static_cast<tpcommVariant_t>(i)))
      continue;
    EXPECT_TRUE(seen.count(i)) << "no planned call reaches " << r.name;
  }
}

TEST(LaunchedThreads, TheEpilogueKernelLaunchesThePlannedGrid) {
  for (int world : {2, 8})
    for (bool clusters : {false, true})
      for (size_t rows : {1, 16, 300, 5000})
        for (size_t hidden : {1000, 4096, 7168, 16384}) {
          CommFacts f = factsFor(world, Fabric::kNvlink, tpcommAlgoNccl);  // always unfused
          f.clusters = clusters;
          const Call call = fusedCall(rows, hidden, tpcommBfloat16, hidden == 4096);
          const EpiloguePlan& e = planCall(f, call).epilogue;
          const std::string what =
              std::to_string(rows) + "x" + std::to_string(hidden) + (clusters ? " clusters" : "");
          ASSERT_EQ(e.variant, epilogueVariant(call.fp8)) << what;
          EXPECT_EQ(e.cluster, 1) << what;
          // A thread per vector of a row, at most the bound; a block per row up to 4096.
          EXPECT_EQ(static_cast<size_t>(e.threads),
                    std::min<size_t>(512, (hidden * 2 / 16 + 31) / 32 * 32))
              << what;
          EXPECT_EQ(static_cast<size_t>(e.blocks), std::min<size_t>(rows, 4096)) << what;
        }
}

// A lean grid of 480 threads has room for the checker's warp to the launch bound exactly: 512
// threads launch (block_bytes=7680: one block, a vector a thread).
TEST(LaunchedThreads, TheCheckerWarpFillsTheBlockToTheBound) {
  CommFacts f = factsFor(2, Fabric::kNvlink);
  f.knobs.block_bytes = 7680;
  const CallPlan p = planCall(f, Call{7680, true});
  ASSERT_EQ(p.variant, tpcommVariantP2pOneShotLean) << p.decision.reason;
  EXPECT_EQ(p.grid.blocks, 1);
  EXPECT_EQ(p.grid.threads, 480);
  EXPECT_EQ(p.threads, 512);
}

}  // namespace
}  // namespace tpcomm
