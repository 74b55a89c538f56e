// Grid planning (src/plan/grid.cc): pure, identical on every rank, within the kernels' bounds.
#include <gtest/gtest.h>

#include "plan/grid.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;
constexpr size_t kStep = 8 * MiB;  // a one-shot step / two-shot chunk of the default slots

TEST(Grid, SpreadsByBytesPerBlock) {
  LaunchKnobs k;
  EXPECT_EQ(planGrid(tpcommAlgoOneShot, 1 * KiB, kStep, 2, k).blocks, 1);
  EXPECT_EQ(planGrid(tpcommAlgoOneShot, 16 * KiB, kStep, 2, k).blocks, 8);
  EXPECT_EQ(planGrid(tpcommAlgoOneShot, 64 * KiB, kStep, 2, k).blocks, 32);
  EXPECT_EQ(planGrid(tpcommAlgoOneShot, 64 * MiB, kStep, 2, k).blocks, kDefaultMaxBlocks);
  // Two-shot: a block owns a sub-range of every segment (1/world of a step).
  EXPECT_EQ(planGrid(tpcommAlgoTwoShot, 64 * KiB, kStep, 2, k).blocks, 16);
  // Island: a block owns a sub-range of every segment; a segment is 1/(world/2) of a step.
  EXPECT_EQ(planGrid(tpcommAlgoIsland, 64 * KiB, kStep, 8, k).blocks, 8);
  EXPECT_EQ(planGrid(tpcommAlgoIsland, 64 * KiB, kStep, 4, k).blocks, 16);
  EXPECT_EQ(planGrid(tpcommAlgoIsland, 64 * KiB, kStep, 6, k).blocks, 11);
  // Host algorithms: 1 KiB per block (LL), 16 KiB for bulk (a flag and a fence per block).
  EXPECT_EQ(planGrid(tpcommAlgoHostOneShot, 16 * KiB, kStep, 2, k).blocks, 16);
  EXPECT_EQ(planGrid(tpcommAlgoHostBulk, 256 * KiB, kStep, 2, k).blocks, 16);
  EXPECT_EQ(planGrid(tpcommAlgoHostBulk, 256 * KiB, kStep, 2, k).threads, 512);
  // Bulk keeps a thread per vector (up to the bound) whatever the push batch.
  k.push_batch = 4;
  EXPECT_EQ(planGrid(tpcommAlgoHostBulk, 256 * KiB, kStep, 2, k).threads, 512);
  EXPECT_EQ(planGrid(tpcommAlgoOneShot, 256 * KiB, kStep, 2, k).threads, 32);
}

TEST(Grid, ThreadsAreWholeWarpsWithinTheLaunchBound) {
  const LaunchKnobs k;
  for (size_t b : {size_t{2}, size_t{100}, 4 * KiB, 1 * MiB, 256 * MiB})
    for (int algo : {tpcommAlgoOneShot, tpcommAlgoTwoShot, tpcommAlgoHostOneShot, tpcommAlgoIsland,
                     tpcommAlgoHostBulk})
      for (int world : {2, 3, 8}) {
        const GridPlan g = planGrid(algo, b, kStep, world, k);
        EXPECT_GE(g.blocks, 1);
        EXPECT_LE(g.blocks, kDefaultMaxBlocks);
        EXPECT_EQ(g.threads % 32, 0);
        EXPECT_GE(g.threads, 32);
        EXPECT_LE(g.threads, 512);
      }
}

TEST(Grid, KnobsBoundTheGrid) {
  LaunchKnobs k;
  k.max_blocks = 4;
  EXPECT_EQ(planGrid(tpcommAlgoOneShot, 64 * MiB, kStep, 2, k).blocks, 4);
  k.max_threads = 128;
  EXPECT_LE(planGrid(tpcommAlgoOneShot, 64 * MiB, kStep, 2, k).threads, 128);
}

TEST(Grid, PushBatchBySizeUnlessSet) {
  LaunchKnobs k;
  EXPECT_EQ(planGrid(tpcommAlgoOneShot, 1 * MiB, kStep, 2, k).push_batch, 1);
  EXPECT_EQ(planGrid(tpcommAlgoOneShot, kBatchFromBytes, kStep, 2, k).push_batch, 4);
  k.push_batch = 2;
  EXPECT_EQ(planGrid(tpcommAlgoOneShot, 1 * KiB, kStep, 2, k).push_batch, 2);
}

TEST(Grid, PushShareOfTheSplitOneShotIsMeasuredDefaultWithinRange) {
  LaunchKnobs k;
  // The measured best on 2x H200 (plan/grid.h): 2 of 8 warps push, 6 reduce.
  EXPECT_EQ(planGrid(tpcommAlgoOneShot, 64 * MiB, kStep, 2, k).push_eighths, 2);
  k.push_eighths = 0;  // out of range is clamped: both sides keep at least one eighth
  EXPECT_EQ(planGrid(tpcommAlgoOneShot, 64 * MiB, kStep, 2, k).push_eighths, 1);
  k.push_eighths = 8;
  EXPECT_EQ(planGrid(tpcommAlgoOneShot, 64 * MiB, kStep, 2, k).push_eighths, 7);
}

}  // namespace
}  // namespace tpcomm
