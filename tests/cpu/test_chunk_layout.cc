// The chunked algorithms' call geometry (src/kernels/layout/chunk_layout.h), walked the way the
// two-shot and island kernels walk it: every vector of the message is handled exactly once, by one
// (step, segment, block, thread); no offset leaves its area of the slot; a thread's offsets are
// the same in every step (the rule the four-slot argument in docs/PROTOCOL.md rests on).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/layout/chunk_layout.h"

namespace tpcomm {
namespace {

struct Shape {
  size_t nvec;          // vectors in the message
  size_t slot_entries;  // entries in a slot (one step)
  int parts;            // segments per chunk (ranks, or island members)
  int areas;            // areas per rank in a slot (two-shot 2*world, island 2m+2)
  size_t chunk_vecs;    // what the host asks for (clamped by the slot)
  unsigned grid, block;
};

std::string describe(const Shape& s) {
  return "nvec " + std::to_string(s.nvec) + ", slot " + std::to_string(s.slot_entries) +
         ", parts " + std::to_string(s.parts) + ", areas " + std::to_string(s.areas) + ", chunk " +
         std::to_string(s.chunk_vecs) + ", grid " + std::to_string(s.grid) + "x" +
         std::to_string(s.block);
}

// Walks the call like the kernels' loops; counts how often each vector is handled.
void walk(const Shape& s) {
  SCOPED_TRACE(describe(s));
  const ChunkedCall k = chunkedCall(s.slot_entries, s.areas, s.parts, s.nvec, s.chunk_vecs, s.grid);
  ASSERT_GT(k.chunk_vecs, 0u);
  ASSERT_LE(k.chunk_vecs, s.chunk_vecs);
  ASSERT_LE(k.chunk_vecs, k.seg_cap * static_cast<size_t>(s.parts));
  std::vector<int> seen(s.nvec, 0);
  std::vector<size_t> first_offset(static_cast<size_t>(s.grid) * s.block, ~size_t{0});
  constexpr size_t kSlotBytes = 4096;
  for (size_t step = 0; step < k.nsteps; ++step) {
    for (unsigned b = 0; b < s.grid; ++b) {
      for (unsigned t = 0; t < s.block; ++t) {
        const ChunkStep st = chunkStep(k, /*epoch0=*/7, step, kSlotBytes, b, t);
        ASSERT_EQ(st.slot_off, ((7 + step) % kNumSlots) * kSlotBytes);
        ASSERT_GT(st.len, 0u) << "an empty step " << step;
        ASSERT_LE(st.seg, k.seg_cap) << "a segment longer than its area";
        size_t& first = first_offset[static_cast<size_t>(b) * s.block + t];
        if (first == ~size_t{0}) first = st.o0;
        ASSERT_EQ(first, st.o0) << "block " << b << " thread " << t << " moved in step " << step;
        for (int d = 0; d < s.parts; ++d) {
          const size_t end = minVecs(st.o1, st.segLen(d));
          for (size_t o = st.o0; o < end; o += s.block) {
            ASSERT_LT(o, k.seg_cap) << "entry outside its area";
            const size_t v = st.base + static_cast<size_t>(d) * st.seg + o;
            ASSERT_LT(v, s.nvec);
            ++seen[v];
          }
        }
      }
    }
  }
  for (size_t v = 0; v < s.nvec; ++v) ASSERT_EQ(seen[v], 1) << "vector " << v;
}

TEST(ChunkLayout, EveryVectorOnceInOneStepCalls) {
  for (size_t nvec : {1u, 7u, 100u, 1000u, 4097u})
    for (int parts : {2, 3, 4, 8})
      for (unsigned grid : {1u, 3u, 16u})
        walk(Shape{nvec, 1u << 16, parts, 2 * parts, ~size_t{0}, grid, 64});
}

TEST(ChunkLayout, EveryVectorOnceAcrossManyShortSteps) {
  // Short chunks (the host's chunk_vecs) and slots that do not divide evenly: the last step is
  // shorter, and some of its segments are short or empty.
  for (size_t nvec : {5u, 999u, 5000u})
    for (int parts : {2, 3, 5, 8})
      for (size_t chunk : {1u, 7u, 64u, 1000u})
        for (unsigned grid : {1u, 4u, 9u})
          walk(Shape{nvec, 3000, parts, 2 * parts, chunk, grid, 32});
}

TEST(ChunkLayout, TheSlotCapsTheChunk) {
  // Island layout (2m + 2 areas) with a slot smaller than the message asks for: the chunk is
  // clamped to seg_cap * parts, and the call takes several steps.
  for (int m : {2, 3, 4}) {
    const Shape s{20000, 1000, m, 2 * m + 2, ~size_t{0}, 8, 32};
    const ChunkedCall k =
        chunkedCall(s.slot_entries, s.areas, s.parts, s.nvec, s.chunk_vecs, s.grid);
    EXPECT_EQ(k.seg_cap, 1000u / static_cast<size_t>(2 * m + 2));
    EXPECT_EQ(k.chunk_vecs, k.seg_cap * static_cast<size_t>(m));
    EXPECT_EQ(k.nsteps, (20000 + k.chunk_vecs - 1) / k.chunk_vecs);
    walk(s);
  }
}

// island_pull's outbox slot (island_pull.cu): m + 3 areas (m input areas, the fp32 partial's
// two, the result's one), walked as its kernel walks it, several steps where the slot is short.
TEST(ChunkLayout, IslandPullSlotLayout) {
  for (int m : {2, 3, 4})
    for (size_t nvec : {1u, 4097u, 30000u})
      for (unsigned grid : {1u, 4u, 9u}) {
        const Shape s{nvec, 4096, m, m + 3, ~size_t{0}, grid, 32};
        walk(s);
        const ChunkedCall k =
            chunkedCall(s.slot_entries, s.areas, s.parts, s.nvec, s.chunk_vecs, s.grid);
        EXPECT_LE(k.seg_cap * static_cast<size_t>(m + 3), s.slot_entries);
      }
}

}  // namespace
}  // namespace tpcomm
