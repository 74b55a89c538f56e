// Argument validation of tpcommAllReduceAddRmsNorm: each bad argument has its code and a message
// naming it; the in-place forms the API promises pass.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "comm/checks/validate_fused.h"
#include "common/error.h"

namespace tpcomm {
namespace {

bool says(const char* word) {
  return std::string(lastError()).find(word) != std::string::npos;
}

alignas(16) char g_buf[1 << 16];
const float* const kScale = reinterpret_cast<const float*>(g_buf + 60000);

// tokens 4, hidden 64, bf16: 512 bytes a tensor, each in its own part of g_buf.
FusedCallBuffers good(const tpcommRmsNormParams_t* p) {
  return FusedCallBuffers{
      g_buf, g_buf + 1024, g_buf + 2048, g_buf + 3072, g_buf + 4096, 4, 64, tpcommBfloat16, p};
}

TEST(ValidateFused, AcceptsTheCallAndItsInPlaceForms) {
  const tpcommRmsNormParams_t p = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  size_t bytes = 0;
  FusedCallBuffers a = good(&p);
  ASSERT_EQ(validateFusedArgs(a, 9, 0, &bytes), tpcommSuccess) << lastError();
  EXPECT_EQ(bytes, 4u * 64 * 2);
  a.residual_out = const_cast<void*>(a.residual_in);  // residual in place
  a.norm_out = const_cast<void*>(a.input);            // norm into x
  EXPECT_EQ(validateFusedArgs(a, 9, 0, &bytes), tpcommSuccess) << lastError();
  a = good(&p);
  a.tokens = 0;
  EXPECT_EQ(validateFusedArgs(a, 9, 0, &bytes), tpcommSuccess) << lastError();
  EXPECT_EQ(bytes, 0u);
}

TEST(ValidateFused, EveryBadArgumentHasItsCodeAndMessage) {
  const tpcommRmsNormParams_t p = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  size_t bytes = 0;
  struct Case {
    const char* word;
    tpcommResult_t code;
    void (*edit)(FusedCallBuffers&);
  };
  const Case cases[] = {
      {"input is NULL", tpcommInvalidArgument, [](FusedCallBuffers& a) { a.input = nullptr; }},
      {"gamma is NULL", tpcommInvalidArgument, [](FusedCallBuffers& a) { a.gamma = nullptr; }},
      {"normOut is NULL", tpcommInvalidArgument, [](FusedCallBuffers& a) { a.norm_out = nullptr; }},
      {"params is NULL", tpcommInvalidArgument, [](FusedCallBuffers& a) { a.params = nullptr; }},
      {"datatype 3", tpcommInvalidArgument, [](FusedCallBuffers& a) { a.datatype = 3; }},
      {"hidden is 0", tpcommInvalidArgument, [](FusedCallBuffers& a) { a.hidden = 0; }},
      {"hidden is 65537", tpcommInvalidArgument, [](FusedCallBuffers& a) { a.hidden = 65537; }},
      {"overflows", tpcommInvalidArgument, [](FusedCallBuffers& a) { a.tokens = SIZE_MAX / 8; }},
      {"not aligned", tpcommInvalidArgument, [](FusedCallBuffers& a) { a.gamma = g_buf + 4097; }},
      {"residualIn and residualOut overlap", tpcommInvalidArgument,
       [](FusedCallBuffers& a) { a.residual_out = g_buf + 1024 + 64; }},
      {"input and normOut overlap", tpcommInvalidArgument,
       [](FusedCallBuffers& a) { a.norm_out = g_buf + 2; }},
      {"normOut and residualOut overlap", tpcommInvalidArgument,
       [](FusedCallBuffers& a) { a.norm_out = a.residual_out; }},
      {"residualOut and input overlap", tpcommInvalidArgument,
       [](FusedCallBuffers& a) { a.residual_out = g_buf + 128; }},
      {"gamma and normOut overlap", tpcommInvalidArgument,
       [](FusedCallBuffers& a) { a.gamma = g_buf + 3072; }},
  };
  for (const Case& c : cases) {
    FusedCallBuffers a = good(&p);
    c.edit(a);
    EXPECT_EQ(validateFusedArgs(a, 9, 0, &bytes), c.code) << c.word;
    EXPECT_TRUE(says(c.word)) << "want '" << c.word << "', got: " << lastError();
  }
}

TEST(ValidateFused, ParamsAreChecked) {
  size_t bytes = 0;
  tpcommRmsNormParams_t p = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  p.version = 7;
  EXPECT_EQ(validateFusedArgs(good(&p), 9, 0, &bytes), tpcommInvalidArgument);
  EXPECT_TRUE(says("version is 7")) << lastError();
  p = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  p.eps = 0.f;
  EXPECT_EQ(validateFusedArgs(good(&p), 9, 0, &bytes), tpcommInvalidArgument);
  EXPECT_TRUE(says("eps")) << lastError();
  p.eps = NAN;
  EXPECT_EQ(validateFusedArgs(good(&p), 9, 0, &bytes), tpcommInvalidArgument);
  p = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  p.weightOffset = 2;
  EXPECT_EQ(validateFusedArgs(good(&p), 9, 0, &bytes), tpcommInvalidArgument);
  EXPECT_TRUE(says("weightOffset is 2")) << lastError();
}

TEST(ValidateFused, Fp8NeedsAda) {
  size_t bytes = 0;
  tpcommRmsNormParams_t p = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  p.quantScale = kScale;
  EXPECT_EQ(validateFusedArgs(good(&p), 8, 6, &bytes), tpcommUnsupported);
  EXPECT_TRUE(says("8.9 or newer")) << lastError();
  // The bound itself (8.8 refused, 8.9 taken), and every major before Ada (7.5: Turing).
  EXPECT_EQ(validateFusedArgs(good(&p), 8, 8, &bytes), tpcommUnsupported);
  EXPECT_EQ(validateFusedArgs(good(&p), 7, 5, &bytes), tpcommUnsupported);
  EXPECT_TRUE(says("this GPU is 7.5")) << lastError();
  EXPECT_EQ(validateFusedArgs(good(&p), 8, 9, &bytes), tpcommSuccess) << lastError();
  EXPECT_EQ(validateFusedArgs(good(&p), 12, 0, &bytes), tpcommSuccess) << lastError();
  // FP8 output is a quarter or half the size: normOut may sit on a byte boundary, never on x.
  FusedCallBuffers a = good(&p);
  a.norm_out = g_buf + 3073;
  EXPECT_EQ(validateFusedArgs(a, 9, 0, &bytes), tpcommSuccess) << lastError();
  a.norm_out = const_cast<void*>(a.input);
  EXPECT_EQ(validateFusedArgs(a, 9, 0, &bytes), tpcommInvalidArgument);
}

// The documented limits are inclusive: hidden up to kMaxRmsNormHidden (65536); buffers that touch
// without sharing a byte are apart. (FP8's compute-capability bound: Fp8NeedsAda.)
TEST(ValidateFused, TheLimitsThemselvesAreAccepted) {
  size_t bytes = 0;
  EXPECT_EQ(fusedPayloadBytes("op", 2, kMaxRmsNormHidden, tpcommBfloat16, &bytes), tpcommSuccess)
      << lastError();
  EXPECT_EQ(bytes, 2 * kMaxRmsNormHidden * 2);
  tpcommRmsNormParams_t p = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  FusedCallBuffers a = good(&p);
  a.residual_out = g_buf + 1024 + 512;  // right after residualIn's 512 bytes
  EXPECT_EQ(validateFusedArgs(a, 9, 0, &bytes), tpcommSuccess) << lastError();
}

}  // namespace
}  // namespace tpcomm
