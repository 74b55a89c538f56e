// The add + RMSNorm (+ FP8) epilogue kernel on its own (src/kernels/add_rmsnorm.h) against the
// host reference (tests/support/rmsnorm_reference.h): residual_out bit for bit, the norm within an
// ulp of the output format, every dtype, the hidden sizes engines use plus odd ones, one to 257
// rows, misaligned buffers, the in-place forms, and the same bits on a second run.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

#include "kernels/add_rmsnorm.h"
#include "plan/fused_plan.h"
#include "tests/gpu/harness.h"
#include "tests/support/rmsnorm_reference.h"

namespace tpcomm::test {
namespace {

struct DeviceBuf {
  void* p = nullptr;
  explicit DeviceBuf(size_t n) { cudaMalloc(&p, n + 64); }
  ~DeviceBuf() { cudaFree(p); }
  char* at(size_t off) const { return static_cast<char*>(p) + off; }
};

enum class Alias { kNone, kResidualInPlace, kNormIntoAr };

// Runs one case; `skew` bytes of misalignment on every buffer (a multiple of the element size).
void runCase(const RmsNormCase& c, Alias alias, size_t skew) {
  const size_t es = elemSize(c.dtype), n = c.rows * c.hidden;
  const std::string what = std::string(dtypeName(c.dtype)) + " rows=" + std::to_string(c.rows) +
                           " hidden=" + std::to_string(c.hidden) + (c.gemma ? " gemma" : "") +
                           (c.scale > 0 ? " fp8" : "") + " skew=" + std::to_string(skew) +
                           " alias=" + std::to_string(static_cast<int>(alias));
  std::vector<uint8_t> ar_t = makeInput(c.dtype, n, 11 + c.hidden, 0);
  std::vector<uint8_t> res = makeInput(c.dtype, n, 12 + c.rows, 1);
  std::vector<uint8_t> gamma = makeInput(c.dtype, c.hidden, 13, 2);
  std::vector<float> ar(n);
  for (size_t i = 0; i < n; ++i)
    ar[i] = static_cast<float>(toDouble(c.dtype, ar_t.data() + i * es));
  const RmsNormExpected want = rmsNormReference(c, ar, res, gamma);

  const size_t out_es = c.scale > 0 ? 1 : es;
  DeviceBuf d_ar(n * es), d_res(n * es), d_rout(n * es), d_norm(n * es), d_gamma(c.hidden * es),
      d_scale(4);
  ASSERT_EQ(cudaMemcpy(d_ar.at(skew), ar_t.data(), n * es, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_res.at(skew), res.data(), n * es, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_gamma.at(skew), gamma.data(), c.hidden * es, cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_scale.p, &c.scale, 4, cudaMemcpyHostToDevice), cudaSuccess);

  AddRmsNormArgs a{};
  a.ar = d_ar.at(skew);
  a.residual_in = d_res.at(skew);
  a.residual_out = alias == Alias::kResidualInPlace ? d_res.at(skew) : d_rout.at(skew);
  a.norm_out = alias == Alias::kNormIntoAr ? d_ar.at(skew) : d_norm.at(skew);
  a.gamma = d_gamma.at(skew);
  a.quant_scale = c.scale > 0 ? static_cast<const float*>(d_scale.p) : nullptr;
  a.rows = c.rows;
  a.hidden = c.hidden;
  a.dtype = c.dtype;
  a.eps = c.eps;
  a.weight_offset = c.gemma;
  const AddRmsNormLaunch g{epilogueVariant(c.scale > 0), addRmsNormGrid(c.rows, c.hidden, es, 0)};
  ASSERT_EQ(launchAddRmsNorm(a, g, nullptr), tpcommSuccess) << tpcommGetLastError();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  std::vector<uint8_t> got_res(n * es), got_norm(n * out_es);
  ASSERT_EQ(cudaMemcpy(got_res.data(), a.residual_out, n * es, cudaMemcpyDeviceToHost),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got_norm.data(), a.norm_out, n * out_es, cudaMemcpyDeviceToHost),
            cudaSuccess);
  size_t bad_res = 0, bad_norm = 0;
  for (size_t i = 0; i < n; ++i) {
    if (memcmp(got_res.data() + i * es, want.residual_out.data() + i * es, es) != 0) ++bad_res;
    if (!normClose(c, want.norm[i], got_norm.data() + i * out_es)) {
      if (bad_norm++ < 3)
        ADD_FAILURE() << what << ": norm[" << i << "] want " << want.norm[i] << " got "
                      << (c.scale > 0 ? e4m3Decode(got_norm[i]) * c.scale
                                      : toDouble(c.dtype, got_norm.data() + i * es));
    }
  }
  EXPECT_EQ(bad_res, 0u) << what << ": residual_out elements differing from the reference";
  EXPECT_EQ(bad_norm, 0u) << what << ": norm elements off by more than an ulp";
}

TEST(AddRmsNorm, EveryDtypeAndHiddenSize) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const tpcommDataType_t dts[] = {tpcommBfloat16, tpcommFloat16, tpcommFloat32};
  const size_t hiddens[] = {128, 4096, 6144, 7168, 8192, 16384, 1, 7, 1000, 4097};
  const size_t rows[] = {1, 3, 16};
  for (tpcommDataType_t dt : dts)
    for (size_t h : hiddens)
      for (size_t t : rows) runCase({dt, t, h, 1e-6f, false, 0.f}, Alias::kNone, 0);
}

TEST(AddRmsNorm, ManyRowsGemmaAndFp8) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (size_t t : {64, 257}) runCase({tpcommBfloat16, t, 7168, 1e-5f, false, 0.f}, Alias::kNone, 0);
  runCase({tpcommBfloat16, 5, 4096, 1e-6f, true, 0.f}, Alias::kNone, 0);
  runCase({tpcommFloat16, 5, 4096, 1e-6f, true, 0.f}, Alias::kNone, 0);
  for (tpcommDataType_t dt : {tpcommBfloat16, tpcommFloat16, tpcommFloat32})
    for (float scale : {1.f, 0.02f, 7.5f}) {
      runCase({dt, 4, 7168, 1e-6f, false, scale}, Alias::kNone, 0);
      runCase({dt, 3, 1001, 1e-6f, false, scale}, Alias::kNone, 0);
    }
}

TEST(AddRmsNorm, MisalignedAndInPlace) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (tpcommDataType_t dt : {tpcommBfloat16, tpcommFloat32}) {
    const size_t es = elemSize(dt);
    runCase({dt, 3, 7168, 1e-6f, false, 0.f}, Alias::kNone, es);
    runCase({dt, 3, 7168, 1e-6f, false, 0.f}, Alias::kResidualInPlace, 0);
    runCase({dt, 3, 7168, 1e-6f, false, 0.f}, Alias::kNormIntoAr, 0);
    runCase({dt, 3, 7168, 1e-6f, false, 2.f}, Alias::kResidualInPlace, es);
  }
}

}  // namespace
}  // namespace tpcomm::test
