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
  EXPECT_EQ(planGrid(tpcommAlgoTwoShot, 16 * MiB, kStep, 2, k).push_batch, 4);
  // The multi-step one-shot keeps a vector per thread: a block's 8 KiB of a 1 MiB step gets 512
  // threads, not 128 (measured: 95.8 against 139.5 us at 32 MiB; plan/grid.h).
  const GridPlan split = planGrid(tpcommAlgoOneShot, 32 * MiB, 1 * MiB, 2, k);
  EXPECT_EQ(split.push_batch, 1);
  EXPECT_EQ(split.blocks, kDefaultMaxBlocks);
  EXPECT_EQ(split.threads, 512);
  k.push_batch = 2;
  EXPECT_EQ(planGrid(tpcommAlgoOneShot, 1 * KiB, kStep, 2, k).push_batch, 2);
  EXPECT_EQ(planGrid(tpcommAlgoOneShot, 32 * MiB, 1 * MiB, 2, k).push_batch, 2);
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

// TPCOMM_KNOBS / config.launchKnobs refuse knobs out of range with this reason, naming the field
// and its value.
TEST(Grid, KnobsOutOfRangeAreNamed) {
  constexpr int kBound = 512;
  EXPECT_EQ(launchKnobsError(LaunchKnobs{}, kBound), "");
  const struct {
    void (*set)(LaunchKnobs&);
    const char* says;
  } cases[] = {
      {[](LaunchKnobs& k) { k.block_bytes = 8; }, "block_bytes=8 is out of range"},
      {[](LaunchKnobs& k) { k.host_block_bytes = 15; }, "host_block_bytes=15 is out of range"},
      {[](LaunchKnobs& k) { k.bulk_block_bytes = 0; }, "bulk_block_bytes=0 is out of range"},
      {[](LaunchKnobs& k) { k.bulk_step_bytes = -1; }, "bulk_step_bytes=-1 is out of range"},
      {[](LaunchKnobs& k) { k.oneshot_step_bytes = -5; }, "oneshot_step_bytes=-5 is out of range"},
      {[](LaunchKnobs& k) { k.max_blocks = 1025; }, "max_blocks=1025 is out of range"},
      {[](LaunchKnobs& k) { k.max_threads = 48; }, "max_threads=48 is out of range"},
      {[](LaunchKnobs& k) { k.max_threads = 1024; }, "max_threads=1024 is out of range"},
      {[](LaunchKnobs& k) { k.push_batch = 5; }, "push_batch=5 is out of range"},
      {[](LaunchKnobs& k) { k.push_eighths = 8; }, "push_eighths=8 is out of range"},
  };
  for (const auto& c : cases) {
    LaunchKnobs k;
    c.set(k);
    EXPECT_EQ(launchKnobsError(k, kBound).rfind(c.says, 0), 0u) << launchKnobsError(k, kBound);
  }
  // The bounds themselves are accepted.
  LaunchKnobs edge;
  edge.block_bytes = edge.host_block_bytes = edge.bulk_block_bytes = 16;
  edge.max_blocks = 1024;
  edge.max_threads = kBound;
  edge.push_batch = 4;
  edge.push_eighths = 7;
  EXPECT_EQ(launchKnobsError(edge, kBound), "");
}

// The knobs' lower bounds are exact: a byte under a block's 16, no eighth for the pushes.
TEST(Grid, KnobsJustBelowTheirBoundsAreNamed) {
  LaunchKnobs k;
  k.block_bytes = 15;
  EXPECT_EQ(launchKnobsError(k, 512).rfind("block_bytes=15 is out of range (expected >= 16)", 0),
            0u)
      << launchKnobsError(k, 512);
  k = LaunchKnobs{};
  k.push_eighths = 0;
  EXPECT_EQ(launchKnobsError(k, 512).rfind("push_eighths=0 is out of range (expected 1..7)", 0), 0u)
      << launchKnobsError(k, 512);
}

}  // namespace
}  // namespace tpcomm
