// What a call refused on a broken communicator poisons (src/comm/call/poison_outputs.h): exactly
// each collective's outputs, every byte of them, nothing past them.
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "comm/call/poison_outputs.h"

namespace tpcomm {
namespace {

void* at(uintptr_t a) {
  return reinterpret_cast<void*>(a);
}

TEST(PoisonOutputs, AllReduceIsRecvbuff) {
  const OutputSpan o = allReduceOutput(at(0x1000), 1000, 2);
  EXPECT_EQ(o.ptr, at(0x1000));
  EXPECT_EQ(o.bytes, 2000u);
  EXPECT_EQ(allReduceOutput(at(0x1000), 7, 4).bytes, 28u);
}

TEST(PoisonOutputs, ReduceScatterIsItsRunAllGatherEveryRun) {
  for (int world : {2, 3, 8}) {
    const OutputSpan rs = rsagOutput(tpcommCollReduceScatter, at(0x2000), 96, 2, world);
    EXPECT_EQ(rs.ptr, at(0x2000));
    EXPECT_EQ(rs.bytes, 96u * 2) << "recvcount elements, whatever the world (" << world << ")";
    const OutputSpan ag = rsagOutput(tpcommCollAllGather, at(0x3000), 96, 4, world);
    EXPECT_EQ(ag.ptr, at(0x3000));
    EXPECT_EQ(ag.bytes, static_cast<size_t>(world) * 96 * 4) << "world runs of sendcount";
  }
  // A communicator across machines passes its global world (16 ranks: two machines of 8).
  EXPECT_EQ(rsagOutput(tpcommCollAllGather, at(0x3000), 5, 2, 16).bytes, 160u);
}

TEST(PoisonOutputs, FusedIsResidualAndNorm) {
  const FusedOutputs bf16 = fusedOutputs(at(0x4000), at(0x8000), 3, 4096, 2, false);
  EXPECT_EQ(bf16.residual.ptr, at(0x4000));
  EXPECT_EQ(bf16.residual.bytes, 3u * 4096 * 2);
  EXPECT_EQ(bf16.norm.ptr, at(0x8000));
  EXPECT_EQ(bf16.norm.bytes, 3u * 4096 * 2);
  // FP8 output: one byte an element (0xFF is a NaN in e4m3), the residual stays the input's type.
  const FusedOutputs fp8 = fusedOutputs(at(0x4000), at(0x8000), 3, 4096, 4, true);
  EXPECT_EQ(fp8.residual.bytes, 3u * 4096 * 4);
  EXPECT_EQ(fp8.norm.bytes, 3u * 4096);
}

TEST(PoisonOutputs, ThePoisonIsAllOnes) {
  // All ones: NaN in fp32 (0xFFFFFFFF), fp16 and bf16 (0xFFFF), and e4m3 (0xFF: S.1111.111).
  EXPECT_EQ(kPoisonByte, 0xFF);
  const uint32_t word = 0xFFFFFFFFu;
  float f;
  memcpy(&f, &word, sizeof(f));
  EXPECT_TRUE(std::isnan(f));
}

// The unfused path carries a failed all-reduce's NaN through the epilogue's FP8 conversion
// (kernels/device/rmsnorm_device.cuh, toE4m3: saturating to +-448): NaN must stay NaN, not
// saturate. The host conversion of cuda_fp8.h is the device instruction's emulation
// (cvt.rn.satfinite).
TEST(PoisonOutputs, Fp8ConversionKeepsNaN) {
  for (float x : {NAN, -NAN}) {
    const unsigned b = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    EXPECT_EQ(b & 0x7Fu, 0x7Fu) << "e4m3 of NaN: " << b;
  }
  EXPECT_EQ(__nv_cvt_float_to_fp8(1e9f, __NV_SATFINITE, __NV_E4M3), 0x7Eu) << "448, not NaN";
}

}  // namespace
}  // namespace tpcomm
