// Argument validation of tpcommAllReduce and config resolution: clear codes and messages.
#include <gtest/gtest.h>

#include <string>

#include "comm/checks/validate.h"
#include "comm/lifecycle/config.h"
#include "common/error.h"

namespace tpcomm {
namespace {

bool says(const char* word) {
  return std::string(lastError()).find(word) != std::string::npos;
}

TEST(Validate, EveryBadArgumentHasItsCodeAndMessage) {
  alignas(16) static char buf[4096];
  size_t bytes = 0;
  EXPECT_EQ(validateAllReduceArgs(nullptr, buf, 8, tpcommFloat32, tpcommSum, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("sendbuff is NULL")) << lastError();
  EXPECT_EQ(validateAllReduceArgs(buf, nullptr, 8, tpcommFloat32, tpcommSum, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("recvbuff is NULL")) << lastError();
  EXPECT_EQ(validateAllReduceArgs(buf, buf, 0, tpcommFloat32, tpcommSum, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("count is 0")) << lastError();
  EXPECT_EQ(validateAllReduceArgs(buf, buf, 8, 3, tpcommSum, &bytes), tpcommInvalidArgument);
  EXPECT_TRUE(says("datatype 3")) << lastError();
  EXPECT_EQ(validateAllReduceArgs(buf, buf, 8, tpcommFloat32, 2, &bytes), tpcommInvalidArgument);
  EXPECT_TRUE(says("op 2")) << lastError();
  EXPECT_EQ(validateAllReduceArgs(buf + 1, buf + 1, 8, tpcommBfloat16, tpcommSum, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("not aligned")) << lastError();
  EXPECT_EQ(validateAllReduceArgs(buf, buf + 8, 8, tpcommFloat32, tpcommSum, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("overlap")) << lastError();
  EXPECT_EQ(validateAllReduceArgs(buf, buf, SIZE_MAX / 2, tpcommFloat32, tpcommSum, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("overflows")) << lastError();
}

TEST(Validate, GoodArgumentsGiveTheByteCount) {
  alignas(16) static char a[64], b[64];
  size_t bytes = 0;
  EXPECT_EQ(validateAllReduceArgs(a, b, 7, tpcommFloat16, tpcommSum, &bytes), tpcommSuccess);
  EXPECT_EQ(bytes, 14u);
  EXPECT_EQ(validateAllReduceArgs(a + 2, a + 2, 3, tpcommBfloat16, tpcommSum, &bytes),
            tpcommSuccess);  // in place, 2-byte aligned is enough
  EXPECT_EQ(bytes, 6u);
}

TEST(Config, DefaultsAndEveryBadField) {
  Settings s;
  ASSERT_EQ(resolveSettings(nullptr, &s), tpcommSuccess) << lastError();
  EXPECT_EQ(s.slot_bytes, kDefaultSlotBytes);
  EXPECT_EQ(s.algo, -1);
  tpcommConfig_t c = TPCOMM_CONFIG_INITIALIZER;
  c.bufferBytes = 1 << 20;
  c.timeoutMs = 250;
  c.algo = tpcommAlgoTwoShot;
  c.strict = 1;
  ASSERT_EQ(resolveSettings(&c, &s), tpcommSuccess) << lastError();
  EXPECT_EQ(s.slot_bytes, size_t{1} << 20);
  EXPECT_EQ(s.timeout_ms, 250);
  EXPECT_EQ(s.algo, tpcommAlgoTwoShot);
  EXPECT_TRUE(s.strict);

  auto bad = [&](tpcommConfig_t cfg, const char* word) {
    EXPECT_EQ(resolveSettings(&cfg, &s), tpcommInvalidArgument) << word;
    EXPECT_TRUE(says(word)) << lastError();
  };
  tpcommConfig_t x = TPCOMM_CONFIG_INITIALIZER;
  x.magic = 0;
  bad(x, "TPCOMM_CONFIG_INITIALIZER");
  x = TPCOMM_CONFIG_INITIALIZER;
  x.version = TPCOMM_CONFIG_VERSION + 1;
  bad(x, "newer than this library");
  x = TPCOMM_CONFIG_INITIALIZER;
  x.bufferBytes = 100;
  bad(x, "bufferBytes");
  x = TPCOMM_CONFIG_INITIALIZER;
  x.timeoutMs = -1;
  bad(x, "timeoutMs");
  x = TPCOMM_CONFIG_INITIALIZER;
  x.algo = 99;
  bad(x, "config.algo");
  x = TPCOMM_CONFIG_INITIALIZER;
  x.ncclMode = tpcommNcclGiven;
  bad(x, "ncclComm");
  x = TPCOMM_CONFIG_INITIALIZER;
  x.maxBlocks = 5000;
  bad(x, "maxBlocks");
}

// Buffers that touch without sharing a byte are apart, whichever comes first.
TEST(Validate, AdjacentBuffersDoNotOverlap) {
  alignas(16) static char buf[64];
  size_t bytes = 0;
  EXPECT_EQ(validateAllReduceArgs(buf, buf + 32, 8, tpcommFloat32, tpcommSum, &bytes),
            tpcommSuccess)
      << lastError();
  EXPECT_EQ(bytes, 32u);
  EXPECT_EQ(validateAllReduceArgs(buf + 32, buf, 8, tpcommFloat32, tpcommSum, &bytes),
            tpcommSuccess)
      << lastError();
  EXPECT_EQ(validateAllReduceArgs(buf, buf + 28, 8, tpcommFloat32, tpcommSum, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("overlap")) << lastError();
}

// The largest count whose bytes fit a size_t is taken; one more overflows.
TEST(Validate, TheLargestCountThatFitsIsTaken) {
  size_t bytes = 0;
  EXPECT_EQ(payloadBytes("op", SIZE_MAX / 4, tpcommFloat32, &bytes), tpcommSuccess) << lastError();
  EXPECT_EQ(bytes, SIZE_MAX / 4 * 4);
  EXPECT_EQ(payloadBytes("op", SIZE_MAX / 4 + 1, tpcommFloat32, &bytes), tpcommInvalidArgument);
  EXPECT_TRUE(says("overflows")) << lastError();
}

// Either buffer off the element size is refused, the other one aligned.
TEST(Validate, EitherBufferMisalignedIsRefused) {
  alignas(16) static char buf[64];
  size_t bytes = 0;
  EXPECT_EQ(validateAllReduceArgs(buf, buf + 34, 4, tpcommFloat32, tpcommSum, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("not aligned to the 4-byte element size")) << lastError();
  EXPECT_EQ(validateAllReduceArgs(buf + 34, buf, 4, tpcommFloat32, tpcommSum, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("not aligned to the 4-byte element size")) << lastError();
}

}  // namespace
}  // namespace tpcomm
