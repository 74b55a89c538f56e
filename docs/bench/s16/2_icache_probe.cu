// Cold vs hot instruction fetch: a straight-line body of N FMAs run three times inside one launch
// (the loop around it not unrolled): rep 0 fetches the code, reps 1-2 find it cached.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#define CK(x)                                        \
  do {                                               \
    cudaError_t e = (x);                             \
    if (e != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      return 1;                                      \
    }                                                \
  } while (0)

template <int N>
__global__ void body(long long* out, int launch) {
  float a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5,
        a6 = a0 + 6, a7 = a0 + 7;
  const float b = 1.0001f;
  long long t[4];
#pragma unroll 1
  for (int rep = 0; rep < 3; ++rep) {
    t[rep] = clock64();
#pragma unroll
    for (int i = 0; i < N / 8; ++i) {
      asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+f"(a0) : "f"(b));
      asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+f"(a1) : "f"(b));
      asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+f"(a2) : "f"(b));
      asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+f"(a3) : "f"(b));
      asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+f"(a4) : "f"(b));
      asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+f"(a5) : "f"(b));
      asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+f"(a6) : "f"(b));
      asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+f"(a7) : "f"(b));
    }
    __syncwarp();
  }
  t[3] = clock64();
  if (threadIdx.x == 0) {
    long long* o = out + (launch * gridDim.x + blockIdx.x) * 3;
    o[0] = t[1] - t[0];
    o[1] = t[2] - t[1];
    o[2] = t[3] - t[2];
  }
  if (a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 == 1.2345f) out[0] = 0;
}

template <int N>
int run(int blocks, int threads, long long* d, int launches) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < launches; ++i) body<N><<<blocks, threads, 0, s>>>(d, i);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0, s);
  CK(cudaGraphLaunch(ge, s));
  cudaEventRecord(e1, s);
  CK(cudaStreamSynchronize(s));
  float ms;
  cudaEventElapsedTime(&ms, e0, e1);
  std::vector<long long> h(launches * blocks * 3);
  CK(cudaMemcpy(h.data(), d, h.size() * 8, cudaMemcpyDeviceToHost));
  std::vector<long long> c0, c1, c2;
  for (int i = 0; i < launches * blocks; ++i) {
    c0.push_back(h[i * 3]);
    c1.push_back(h[i * 3 + 1]);
    c2.push_back(h[i * 3 + 2]);
  }
  auto med = [](std::vector<long long> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  int clk = 0;
  cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  printf(
      "N=%5d blocks=%3d threads=%4d  cycles rep0 %6lld rep1 %6lld rep2 %6lld  cold extra %6lld cyc "
      "= %6.0f ns  (%5.2f us/launch in graph)\n",
      N, blocks, threads, med(c0), med(c1), med(c2), med(c0) - med(c1),
      (med(c0) - med(c1)) * 1e6 / clk, ms * 1000 / launches);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  return 0;
}

int main() {
  long long* d;
  CK(cudaMalloc(&d, 1 << 24));
  for (int threads : {32, 512})
    for (int blocks : {1, 8}) {
      run<256>(blocks, threads, d, 200);
      run<1024>(blocks, threads, d, 200);
      run<2048>(blocks, threads, d, 200);
      run<4096>(blocks, threads, d, 200);
    }
  return 0;
}
