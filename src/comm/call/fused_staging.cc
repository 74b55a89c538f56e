#include "comm/call/fused_staging.h"

#include "comm/call/call_common.h"  // aligned16
#include "comm/comm.h"
#include "common/error.h"

namespace tpcomm {
namespace {

constexpr size_t kStandInAlign = 256;

size_t roundUp(size_t n) {
  return (n + kStandInAlign - 1) / kStandInAlign * kStandInAlign;
}

// Stand-in where p is unaligned; the offset it takes.
long long place(const void* p, size_t bytes, size_t* end) {
  if (aligned16(p)) return -1;
  const long long at = static_cast<long long>(*end);
  *end += roundUp(bytes);
  return at;
}

tpcommResult_t copy(void* dst, const void* src, size_t bytes, cudaStream_t s, const char* what) {
  const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s);
  if (e != cudaSuccess)
    return fail(tpcommUnhandledCudaError,
                "tpcommAllReduceAddRmsNorm: copying %s for a rank with unaligned buffers: %s", what,
                cudaGetErrorString(e));
  return tpcommSuccess;
}

// Grows the scratch to at least `bytes`. Under capture (global mode), cudaMalloc is refused, so
// this thread's capture mode is relaxed around it; freeing an old area waits for the device,
// which capture would refuse, so a growing area under capture keeps the old one until destroy.
tpcommResult_t ensureScratch(tpcommComm* c, size_t bytes) {
  if (c->fused_scratch_bytes >= bytes) return tpcommSuccess;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  cudaThreadExchangeStreamCaptureMode(&mode);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return fail(tpcommUnhandledCudaError,
                "tpcommAllReduceAddRmsNorm: %zu bytes of scratch for a rank with unaligned "
                "buffers: %s",
                bytes, cudaGetErrorString(e));
  }
  if (c->fused_scratch) c->retired_scratch.push_back(c->fused_scratch);
  c->fused_scratch = p;
  c->fused_scratch_bytes = bytes;
  return tpcommSuccess;
}

}  // namespace

StagingLayout stagingLayout(const FusedBuffers& b, size_t payload, size_t norm_bytes,
                            size_t gamma_bytes) {
  StagingLayout l;
  size_t end = 0;
  l.input = place(b.input, payload, &end);
  l.residual_in = place(b.residual_in, payload, &end);
  // In place (residual_out == residual_in): its own stand-in all the same, so the kernel reads
  // and writes distinct buffers exactly as it does for an aligned caller's out-of-place call.
  l.residual_out = place(b.residual_out, payload, &end);
  l.norm_out = place(b.norm_out, norm_bytes, &end);
  l.gamma = place(b.gamma, gamma_bytes, &end);
  l.bytes = end;
  return l;
}

tpcommResult_t stageFusedInputs(tpcommComm* c, const StagingLayout& l, const FusedBuffers& user,
                                size_t payload, size_t gamma_bytes, cudaStream_t s,
                                FusedBuffers* k) {
  *k = user;
  if (!l.any()) return tpcommSuccess;
  TPCOMM_CHECK(ensureScratch(c, l.bytes));
  char* base = static_cast<char*>(c->fused_scratch);
  if (l.input >= 0) {
    k->input = base + l.input;
    TPCOMM_CHECK(copy(base + l.input, user.input, payload, s, "input"));
  }
  if (l.residual_in >= 0) {
    k->residual_in = base + l.residual_in;
    TPCOMM_CHECK(copy(base + l.residual_in, user.residual_in, payload, s, "residualIn"));
  }
  if (l.gamma >= 0) {
    k->gamma = base + l.gamma;
    TPCOMM_CHECK(copy(base + l.gamma, user.gamma, gamma_bytes, s, "gamma"));
  }
  if (l.residual_out >= 0) k->residual_out = base + l.residual_out;
  if (l.norm_out >= 0) k->norm_out = base + l.norm_out;
  return tpcommSuccess;
}

tpcommResult_t unstageFusedOutputs(const StagingLayout& l, const FusedBuffers& user,
                                   const FusedBuffers& k, size_t payload, size_t norm_bytes,
                                   cudaStream_t s) {
  if (l.residual_out >= 0)
    TPCOMM_CHECK(copy(user.residual_out, k.residual_out, payload, s, "residualOut"));
  if (l.norm_out >= 0) TPCOMM_CHECK(copy(user.norm_out, k.norm_out, norm_bytes, s, "normOut"));
  return tpcommSuccess;
}

void releaseFusedScratch(tpcommComm* c) {
  for (void* p : c->retired_scratch) cudaFree(p);
  c->retired_scratch.clear();
  if (c->fused_scratch) cudaFree(c->fused_scratch);
  c->fused_scratch = nullptr;
  c->fused_scratch_bytes = 0;
}

}  // namespace tpcomm
