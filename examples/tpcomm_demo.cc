// tpcomm-demo: the smallest complete use of the C API. One process drives one rank per visible GPU
// (two ranks share the GPU when there is only one), all-reduces bf16 buffers of a few sizes,
// checks every rank's result against a host reference, and prints which algorithm ran and why.
// On a machine without a GPU it shows the clear error tpcomm gives instead of crashing.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "tpcomm/tpcomm.h"

namespace {

#define CUDA_OR_DIE(call)                                                \
  do {                                                                   \
    cudaError_t e_ = (call);                                             \
    if (e_ != cudaSuccess) {                                             \
      fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_)); \
      return 1;                                                          \
    }                                                                    \
  } while (0)

float input(int rank, size_t i) {
  return static_cast<float>((i * 7 + rank * 3) % 11) - 5.0f;
}

}  // namespace

// Exit status: 0 all ran and matched, 1 an error or a wrong result, 2 nothing ran (no GPU).
constexpr int kNothingRan = 2;

int main() {
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
    cudaGetLastError();
    // tpcomm's own answer says why: no driver, no device, or a bad TPCOMM_* value (which is
    // checked first, so a typo is reported as itself and not as a missing GPU).
    tpcommComm_t comms[2];
    const tpcommResult_t r = tpcommCommInitAll(comms, 2, nullptr, nullptr);
    if (r != tpcommNoDevice) {
      fprintf(stderr, "tpcomm-demo: tpcommCommInitAll failed with %d (%s):\n  %s\n", r,
              tpcommGetErrorString(r), tpcommGetLastError());
      return 1;
    }
    fprintf(stderr,
            "tpcomm-demo: no CUDA device is visible on this machine, so nothing ran.\n"
            "tpcommCommInitAll returned %d (%s):\n  %s\n"
            "Run this demo on a machine with NVIDIA GPUs; `tpcomm doctor` explains what it sees.\n",
            r, tpcommGetErrorString(r), tpcommGetLastError());
    return kNothingRan;
  }
  const int world = ngpu >= 2 ? (ngpu > 8 ? 8 : ngpu) : 2;
  std::vector<int> devs(world);
  for (int r = 0; r < world; ++r) devs[r] = r % ngpu;
  std::vector<tpcommComm_t> comms(world);
  if (tpcommCommInitAll(comms.data(), world, devs.data(), nullptr) != tpcommSuccess) {
    fprintf(stderr, "tpcommCommInitAll failed: %s\n", tpcommGetLastError());
    return 1;
  }
  printf("tpcomm-demo: %d ranks on %d GPU(s), bf16 sum\n\n", world, ngpu);
  printf("%10s  %-9s %6s  %9s  %s\n", "bytes", "algorithm", "blocks", "us/call", "why");
  const size_t max_count = 8u << 20;  // 16 MiB of bf16
  std::vector<__nv_bfloat16*> buf(world);
  std::vector<cudaStream_t> streams(world);
  std::vector<__nv_bfloat16> host(max_count);
  for (int r = 0; r < world; ++r) {
    CUDA_OR_DIE(cudaSetDevice(devs[r]));
    CUDA_OR_DIE(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    CUDA_OR_DIE(cudaMalloc(&buf[r], max_count * sizeof(__nv_bfloat16)));
  }
  int bad = 0;
  for (size_t count : {size_t{512}, size_t{32768}, size_t{524288}, max_count}) {
    for (int r = 0; r < world; ++r) {
      for (size_t i = 0; i < count; ++i) host[i] = __float2bfloat16(input(r, i));
      CUDA_OR_DIE(cudaSetDevice(devs[r]));
      CUDA_OR_DIE(cudaMemcpy(buf[r], host.data(), count * 2, cudaMemcpyHostToDevice));
    }
    const auto t0 = std::chrono::steady_clock::now();
    // One thread drives every rank: group the calls (an NCCL fallback needs all of them).
    tpcommGroupStart();
    for (int r = 0; r < world; ++r)  // in place
      if (tpcommAllReduce(buf[r], buf[r], count, tpcommBfloat16, tpcommSum, comms[r], streams[r]) !=
          tpcommSuccess) {
        fprintf(stderr, "tpcommAllReduce failed: %s\n", tpcommGetLastError());
        tpcommGroupEnd();
        return 1;
      }
    tpcommGroupEnd();
    for (int r = 0; r < world; ++r) {
      CUDA_OR_DIE(cudaSetDevice(devs[r]));
      CUDA_OR_DIE(cudaStreamSynchronize(streams[r]));
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    for (int r = 0; r < world; ++r) {
      CUDA_OR_DIE(cudaSetDevice(devs[r]));
      CUDA_OR_DIE(cudaMemcpy(host.data(), buf[r], count * 2, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int q = 0; q < world; ++q) want += input(q, i);
        if (__bfloat162float(host[i]) != want) ++bad;
      }
    }
    tpcommCallInfo_t info;
    tpcommCommGetLastCall(comms[0], &info);
    printf("%10zu  %-9s %6d  %9.1f  %s\n", count * 2, tpcommAlgoName(info.algo), info.blocks, us,
           info.reason);
  }
  printf("\n%s: every rank's result %s the host reference.\n", bad ? "FAILED" : "OK",
         bad ? "differs from" : "equals");
  printf(
      "(Times above are one eager call including the host; `tpcomm-bench` measures properly, "
      "next to NCCL.)\n");
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(devs[r]);
    cudaFree(buf[r]);
    cudaStreamDestroy(streams[r]);
    tpcommCommDestroy(comms[r]);
  }
  return bad ? 1 : 0;
}
