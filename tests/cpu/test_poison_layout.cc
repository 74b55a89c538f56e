// What a chunked kernel's failure branch poisons (src/kernels/layout/poison_layout.h): from the
// step it gave up in, exactly the output vectors chunkStep and segmentStep give that thread in that
// step and every later one, worked out from that step alone and without a run-time division; from
// step 0 (a kernel that found the communicator aborted), every vector of the call, once, across
// the grid.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "kernels/layout/poison_layout.h"

namespace tpcomm {
namespace {

TEST(PoisonLayout, DivByPartsIsDivision) {
  for (int d = 1; d <= kMaxRanks; ++d)
    for (size_t a : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{1000},
                     size_t{4097}, (size_t{1} << 40) + 3, ~size_t{0}})
      EXPECT_EQ(divByParts(a, d), a / static_cast<size_t>(d)) << a << " / " << d;
}

// The steps a thread may give up in that the walks below try.
std::set<size_t> stepsToTry(size_t nsteps) {
  std::set<size_t> out;
  for (size_t s : {size_t{0}, size_t{1}, nsteps / 2, nsteps - 2, nsteps - 1})
    if (s < nsteps) out.insert(s);
  return out;
}

// The vectors chunkStep gives thread (b, t) in steps [from, nsteps).
std::set<size_t> chunkVectors(const ChunkedCall& k, size_t from, unsigned b, unsigned t,
                              unsigned block) {
  std::set<size_t> out;
  for (size_t step = from; step < k.nsteps; ++step) {
    const ChunkStep st = chunkStep(k, 3, step, 4096, b, t);
    for (int d = 0; d < k.parts; ++d)
      for (size_t o = st.o0; o < minVecs(st.o1, st.segLen(d)); o += block)
        out.insert(st.base + static_cast<size_t>(d) * st.seg + o);
  }
  return out;
}

void walkChunked(size_t nvec, int parts, size_t chunk_vecs, unsigned grid, unsigned block) {
  SCOPED_TRACE("nvec " + std::to_string(nvec) + ", parts " + std::to_string(parts) + ", chunk " +
               std::to_string(chunk_vecs) + ", grid " + std::to_string(grid));
  const ChunkedCall k = chunkedCall(3000, 2 * parts, parts, nvec, chunk_vecs, grid);
  std::vector<int> seen(nvec, 0);
  for (unsigned b = 0; b < grid; ++b)
    for (unsigned t = 0; t < block; ++t) {
      for (size_t step = 0; step < k.nsteps; ++step) {
        const ChunkStep want = chunkStep(k, 3, step, 4096, b, t);
        const ChunkStep got = chunkStepOffsets(k, step, b, t);
        ASSERT_EQ(got.base, want.base);
        ASSERT_EQ(got.len, want.len);
        ASSERT_EQ(got.seg, want.seg);
        ASSERT_EQ(got.o0, want.o0);
        ASSERT_EQ(got.o1, want.o1);
      }
      // Giving up in a step (the first, the second, a middle one, the last two): that step and
      // every later one, nothing else.
      for (size_t from : stepsToTry(k.nsteps)) {
        std::set<size_t> got;
        const ChunkStep st = chunkStep(k, 3, from, 4096, b, t);
        forChunkStepsFrom(st, nvec, parts, [&](size_t first, size_t end) {
          for (size_t o = st.o0; o < end; o += block) got.insert(first + o);
        });
        ASSERT_EQ(got, chunkVectors(k, from, b, t, block)) << "gave up in step " << from;
        if (from == 0)
          for (size_t v : got) seen[v]++;
      }
    }
  for (size_t v = 0; v < nvec; ++v) ASSERT_EQ(seen[v], 1) << "vector " << v;
}

TEST(PoisonLayout, ChunkedStepsFromAnyStep) {
  for (size_t nvec : {1u, 7u, 999u, 5000u})
    for (int parts : {2, 3, 4, 5, 8})
      for (size_t chunk : {size_t{7}, size_t{64}, size_t{1000}, ~size_t{0}})
        for (unsigned grid : {1u, 3u}) walkChunked(nvec, parts, chunk, grid, 32);
}

TEST(PoisonLayout, SegmentedStepsFromAnyStep) {
  struct Case {
    size_t slot_entries;
    int world;
    size_t seg_vecs, chunk_vecs;
    unsigned grid, block;
  };
  const Case cases[] = {{4096, 2, 1, 1024, 1, 32},   {4096, 2, 1000, 1024, 3, 64},
                        {4096, 3, 4097, 681, 4, 32}, {1 << 14, 8, 1 << 12, 1 << 11, 8, 128},
                        {4096, 8, 5, 256, 16, 32},   {4096, 5, 3000, 1020, 2, 512},
                        {3000, 7, 999, 70, 3, 32}};
  for (const Case& cs : cases) {
    const ChunkedCall k =
        segmentedCall(cs.slot_entries, cs.world, cs.seg_vecs, cs.chunk_vecs, cs.grid);
    SCOPED_TRACE("world " + std::to_string(cs.world) + ", run " + std::to_string(cs.seg_vecs));
    std::vector<int> seen(cs.seg_vecs, 0);
    for (unsigned b = 0; b < cs.grid; ++b)
      for (unsigned t = 0; t < cs.block; ++t) {
        for (size_t step = 0; step < k.nsteps; ++step) {
          const SegmentStep want = segmentStep(k, 9, step, 1, b, t);
          const SegmentStep got = segmentStepOffsets(k, step, b, t);
          ASSERT_EQ(got.first, want.first);
          ASSERT_EQ(got.len, want.len);
          ASSERT_EQ(got.o0, want.o0);
          ASSERT_EQ(got.o1, want.o1);
        }
        for (size_t from : stepsToTry(k.nsteps)) {
          std::set<size_t> want, got;
          for (size_t step = from; step < k.nsteps; ++step) {
            const SegmentStep st = segmentStep(k, 9, step, 1, b, t);
            for (size_t o = st.o0; o < st.o1; o += cs.block) want.insert(st.first + o);
          }
          const SegmentStep st = segmentStep(k, 9, from, 1, b, t);
          forSegmentStepsFrom(st, cs.seg_vecs, [&](size_t first, size_t end) {
            for (size_t o = st.o0; o < end; o += cs.block) got.insert(first + o);
          });
          ASSERT_EQ(got, want) << "gave up in step " << from;
          if (from == 0)
            for (size_t v : got) seen[v]++;
        }
      }
    for (size_t v = 0; v < cs.seg_vecs; ++v) ASSERT_EQ(seen[v], 1) << "vector " << v;
  }
}

}  // namespace
}  // namespace tpcomm
