// The LL protocol's host-memory layout (src/kernels/layout/ll_layout.h), the arithmetic the kernels
// use: every half of every entry of a block has its own 16 bytes inside that block, and a warp's 32
// consecutive entries become two contiguous 512-byte runs.
#include <gtest/gtest.h>

#include <set>

#include "kernels/layout/ll_layout.h"

namespace tpcomm {
namespace {

constexpr uintptr_t kBase = uintptr_t{1} << 40;  // any block-aligned address
constexpr uintptr_t kEntry = 2 * kVecBytes;      // an LL entry: two 16-byte halves

TEST(LLLayout, EachHalfHasItsOwnSlotInItsBlock) {
  for (uintptr_t block : {kBase, kBase + kLLBlockBytes, kBase + 7 * kLLBlockBytes}) {
    std::set<uintptr_t> seen;
    for (uintptr_t e = block; e < block + kLLBlockBytes; e += kEntry) {
      for (int h = 0; h < 2; ++h) {
        const uintptr_t a = llHalfAddress(e, h);
        EXPECT_EQ(a % kVecBytes, 0u);
        EXPECT_GE(a, block);
        EXPECT_LT(a + kVecBytes, block + kLLBlockBytes + 1);
        EXPECT_TRUE(seen.insert(a).second) << "entry " << (e - block) / kEntry << " half " << h;
      }
    }
    EXPECT_EQ(seen.size(), kLLBlockBytes / kVecBytes);  // the block, covered exactly
  }
}

TEST(LLLayout, AWarpsEntriesAreTwoContiguousRuns) {
  for (uintptr_t e = kBase; e < kBase + kLLBlockBytes; e += kEntry) {
    const uintptr_t i = (e - kBase) / kEntry;
    EXPECT_EQ(llHalfAddress(e, 0), kBase + i * kVecBytes);
    EXPECT_EQ(llHalfAddress(e, 1), kBase + kLLBlockBytes / 2 + i * kVecBytes);
  }
}

TEST(LLLayout, RegionsThatStraddleABlockShareItWithoutOverlap) {
  // World 3 with 64 KiB inbox slots: 682 entries per source, so source 1's region starts 682 *
  // 32 bytes in, in the middle of a block. Its halves and source 0's never coincide.
  const uintptr_t region = 682 * kEntry;
  std::set<uintptr_t> source0, source1;
  for (uintptr_t e = kBase; e < kBase + region; e += kEntry)
    for (int h = 0; h < 2; ++h) source0.insert(llHalfAddress(e, h));
  for (uintptr_t e = kBase + region; e < kBase + 2 * region; e += kEntry)
    for (int h = 0; h < 2; ++h) EXPECT_EQ(source0.count(llHalfAddress(e, h)), 0u);
  for (uintptr_t e = kBase + region; e < kBase + 2 * region; e += kEntry)
    for (int h = 0; h < 2; ++h) EXPECT_TRUE(source1.insert(llHalfAddress(e, h)).second);
}

}  // namespace
}  // namespace tpcomm
