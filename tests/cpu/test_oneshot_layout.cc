// The one-shot's call geometry (src/kernels/layout/oneshot_layout.h), walked the way both one-shot
// kernels walk it (oneshot.cu: BlockShare in the general kernel; oneshot_lean.cu: one vector per
// thread): every vector of the message is handled exactly once; no step is longer than a region; a
// block's offsets within a region are the same in every step (the rule the four-slot argument in
// docs/PROTOCOL.md rests on). Which calls the lean kernel takes: test_lean_choice.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/layout/oneshot_layout.h"

namespace tpcomm {
namespace {

struct Shape {
  size_t full;       // vectors of a source's whole region
  size_t step_vecs;  // shorter steps asked for (0: the region)
  size_t nvec;
  unsigned grid;
};

std::string describe(const Shape& s) {
  return "full " + std::to_string(s.full) + ", step " + std::to_string(s.step_vecs) + ", nvec " +
         std::to_string(s.nvec) + ", grid " + std::to_string(s.grid);
}

// The general kernel's loops: step s, block b handles [base + min(len, b*per), base + min(len,
// b*per + per)) with base = s*region and len = min(region, nvec - base).
void walk(const Shape& s) {
  SCOPED_TRACE(describe(s));
  const OneShotCall k = oneShotCall(s.full, s.step_vecs, s.nvec, s.grid);
  ASSERT_GT(k.region, 0u);
  ASSERT_LE(k.region, s.full);
  if (s.step_vecs > 0) {
    ASSERT_LE(k.region, s.step_vecs);
  }
  ASSERT_EQ(k.nsteps, (s.nvec + k.region - 1) / k.region);
  std::vector<int> seen(s.nvec, 0);
  for (size_t step = 0; step < k.nsteps; ++step) {
    const size_t base = step * k.region, len = std::min(k.region, s.nvec - base);
    for (unsigned b = 0; b < s.grid; ++b) {
      const size_t first = base + std::min(len, b * k.per);
      const size_t last = base + std::min(len, b * k.per + k.per);
      // The block's entries within the region start at the same offset in every step.
      if (first < last) {
        ASSERT_EQ(first - base, b * k.per);
      }
      for (size_t v = first; v < last; ++v) ++seen[v];
    }
  }
  for (size_t v = 0; v < s.nvec; ++v) ASSERT_EQ(seen[v], 1) << "vector " << v;
}

TEST(OneShotLayout, EveryVectorOnceInEveryShape) {
  for (size_t full : {size_t{64}, size_t{1000}, size_t{65536}})
    for (size_t step : {size_t{0}, size_t{48}, size_t{4096}, size_t{1} << 20})
      for (size_t nvec :
           {size_t{1}, size_t{7}, size_t{64}, size_t{65}, size_t{4097}, size_t{70001}})
        for (unsigned grid : {1u, 3u, 128u, 1024u}) walk({full, step, nvec, grid});
}

// The lean kernel's peer order: rank + p wrapped once equals (rank + p) mod world for every rank
// and distance of every world size.
TEST(OneShotLayout, RingRankIsTheModulo) {
  for (int world = 1; world <= 8; ++world)
    for (int rank = 0; rank < world; ++rank)
      for (int p = 0; p < world; ++p)
        EXPECT_EQ(ringRank(rank, p, world), (rank + p) % world)
            << "rank " << rank << ", p " << p << ", world " << world;
}

}  // namespace
}  // namespace tpcomm
