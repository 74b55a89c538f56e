// comm/call/fused_staging.h: a fused call plans from shapes every rank shares, and a rank with
// unaligned buffers runs the fused kernel on aligned stand-ins. The layout: only the unaligned
// buffers get one, each 256-byte aligned in the scratch area, sized for its own bytes.
#include <gtest/gtest.h>

#include <cstdint>

#include "comm/call/fused_staging.h"

namespace tpcomm {
namespace {

const void* ptr(uintptr_t a) {
  return reinterpret_cast<const void*>(a);
}
void* mut(uintptr_t a) {
  return reinterpret_cast<void*>(a);
}

TEST(FusedStaging, AlignedBuffersNeedNoStandIns) {
  const FusedBuffers b{ptr(0x1000), ptr(0x2000), mut(0x3000), mut(0x4000), ptr(0x5000)};
  const StagingLayout l = stagingLayout(b, 8192, 8192, 8192);
  EXPECT_FALSE(l.any());
  EXPECT_EQ(l.input, -1);
  EXPECT_EQ(l.gamma, -1);
}

TEST(FusedStaging, OnlyTheUnalignedOnesEachAlignedAndSized) {
  // input and norm_out 2 bytes off, gamma 8 off; the residuals aligned. FP8 norm: 1 byte each.
  const FusedBuffers b{ptr(0x1002), ptr(0x2000), mut(0x3000), mut(0x4002), ptr(0x5008)};
  const StagingLayout l = stagingLayout(b, 1000, 500, 300);
  EXPECT_EQ(l.input, 0);
  EXPECT_EQ(l.residual_in, -1);
  EXPECT_EQ(l.residual_out, -1);
  EXPECT_EQ(l.norm_out, 1024);     // 1000 rounded up to 256
  EXPECT_EQ(l.gamma, 1024 + 512);  // 500 rounded up
  EXPECT_EQ(l.bytes, 1024u + 512u + 512u);
}

TEST(FusedStaging, InPlaceResidualGetsTwoStandIns) {
  // residual_out == residual_in, both unaligned: the kernel reads one stand-in and writes the
  // other, as it does for an aligned out-of-place call; the copy back goes to the user's buffer.
  const FusedBuffers b{ptr(0x1000), ptr(0x2004), mut(0x2004), mut(0x4000), ptr(0x5000)};
  const StagingLayout l = stagingLayout(b, 256, 256, 64);
  EXPECT_EQ(l.residual_in, 0);
  EXPECT_EQ(l.residual_out, 256);
  EXPECT_EQ(l.bytes, 512u);
}

}  // namespace
}  // namespace tpcomm
