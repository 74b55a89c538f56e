// tpcomm-floor's kernel-boundary and bandwidth floors: a kernel in a graph (empty, PDL, the loads
// a call cannot avoid, a push to a peer), a flag's one-way latency, and zero-copy / copy-engine
// bandwidth to pinned host memory.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "bench/floor_probes.cuh"

namespace floor_probe {

// mode 0: empty; 1: PDL wait; 2: + load the input and store it; 3: + the epoch/abort loads;
// 4: mode 2, and the 1 KiB also stored into another GPU's memory (`remote`): a kernel is complete
// only once its remote stores are, so this shows what a push costs the kernel boundary.
__global__ void chainKernel(int mode, const uint4* in, uint4* out, State* st, uint4* remote) {
  if (mode >= 1) triggerDependents();
  if (mode >= 1) waitPrimary();
  if (mode < 2) return;
  uint4 v = in[threadIdx.x];
  if (mode >= 3) {
    __shared__ unsigned long long e;
    if (threadIdx.x == 0) {
      const unsigned a = *reinterpret_cast<volatile unsigned*>(&st->abort);
      unsigned long long x;
      asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(x) : "l"(&st->epoch) : "memory");
      e = a ? 0 : x;
    }
    __syncthreads();
    v.x += static_cast<unsigned>(e);
    if (threadIdx.x == 0) *reinterpret_cast<volatile unsigned long long*>(&st->epoch) = e + 1;
  }
  out[threadIdx.x] = v;
  if (mode == 4) remote[threadIdx.x] = v;
}

double chainUs(int dev, int mode, uint4* remote) {
  CK(cudaSetDevice(dev));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint4 *in, *out;
  State* st;
  CK(cudaMalloc(&in, 1024));
  CK(cudaMalloc(&out, 1024));
  CK(cudaMalloc(&st, sizeof(State)));
  CK(cudaMemset(in, 0, 1024));
  CK(cudaMemset(st, 0, sizeof(State)));
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(1);
  cfg.blockDim = dim3(64);
  cfg.stream = s;
  cfg.attrs = mode >= 1 ? &attr : nullptr;
  cfg.numAttrs = mode >= 1 ? 1 : 0;
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kChain; ++i)
    CK(cudaLaunchKernelEx(&cfg, chainKernel, mode, static_cast<const uint4*>(in), out, st, remote));
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<double> us;
  for (int r = 0; r < kReps + 2; ++r) {
    CK(cudaEventRecord(a, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (r >= 2) us.push_back(ms * 1000.0 / kChain);
  }
  std::sort(us.begin(), us.end());
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaFree(in));
  CK(cudaFree(out));
  CK(cudaFree(st));
  CK(cudaStreamDestroy(s));
  return us[us.size() / 2];
}

// Ping-pong: `me` waits for `*mine == i` (odd i for rank 1, even for rank 0) and writes i+1 to
// `*theirs`. Rank 0 starts. Each round trip is two one-way hops.
__global__ void pingPong(volatile unsigned* mine, volatile unsigned* theirs, int rank, int rounds,
                         unsigned long long* ns) {
  unsigned long long t0 = 0, t1 = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (int i = 0; i < 2 * rounds; ++i) {
    if ((i & 1) != rank) continue;
    if (i > 0)
      while (*mine != static_cast<unsigned>(i)) {
      }
    *theirs = static_cast<unsigned>(i + 1);
  }
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  *ns = t1 - t0;
}

// One-way latency in us between devices 0 and 1, flags in peer memory (host=false) or pinned
// host memory (host=true).
double oneWayUs(bool host) {
  const int rounds = 2000;
  unsigned* flag[2];
  unsigned long long* ns[2];
  cudaStream_t s[2];
  for (int d = 0; d < 2; ++d) {
    CK(cudaSetDevice(d));
    CK(cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking));
    CK(cudaMallocManaged(&ns[d], sizeof(unsigned long long)));
    if (host) {
      CK(cudaHostAlloc(&flag[d], 64, cudaHostAllocMapped | cudaHostAllocPortable));
      *flag[d] = 0;
    } else {
      CK(cudaMalloc(&flag[d], 64));
      CK(cudaMemset(flag[d], 0, 64));
      const cudaError_t e = cudaDeviceEnablePeerAccess(1 - d, 0);
      (void)cudaGetLastError();  // "already enabled" is not an error here, and must not linger
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) return -1;
    }
  }
  for (int d = 0; d < 2; ++d) {
    CK(cudaSetDevice(d));
    CK(cudaDeviceSynchronize());
  }
  // Rank 0's kernel pings rank 1's flag and waits on its own; both must run at once.
  for (int d = 0; d < 2; ++d) {
    CK(cudaSetDevice(d));
    pingPong<<<1, 1, 0, s[d]>>>(flag[d], flag[1 - d], d, rounds, ns[d]);
    CK(cudaGetLastError());
  }
  for (int d = 0; d < 2; ++d) {
    CK(cudaSetDevice(d));
    CK(cudaStreamSynchronize(s[d]));
  }
  const double us = static_cast<double>(*ns[0]) / 1000.0 / (2.0 * rounds);
  for (int d = 0; d < 2; ++d) {
    CK(cudaSetDevice(d));
    if (host)
      CK(cudaFreeHost(flag[d]));
    else
      CK(cudaFree(flag[d]));
    CK(cudaFree(ns[d]));
    CK(cudaStreamDestroy(s[d]));
  }
  return us;
}

// Streams `bytes` between this GPU's SMs and pinned host memory: blocks b with b % 4 < writers4
// write `dst`, the others read `src` (volatile, as the transport does). writers4 = 4: writes
// only, 0: reads only, 1..3: both at once in that proportion.
__global__ void hostStream(int writers4, const uint4* src, uint4* dst, size_t n, unsigned* sink) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool writer = static_cast<int>(blockIdx.x % 4) < writers4;
  unsigned acc = 0;
  for (; i < n; i += stride) {
    if (writer) {
      dst[i] = make_uint4(static_cast<unsigned>(i), 1, 2, 3);
    } else {
      unsigned x, y, z, w;  // one 16-byte volatile load, as the transport's loadVolatile
      asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(x), "=r"(y), "=r"(z), "=r"(w)
                   : "l"(src + i));
      acc ^= x ^ y ^ z ^ w;
    }
  }
  if (acc == 0x12345678u) *sink = acc;  // keeps the loads
}
// GB/s per GPU (the slowest GPU's; both directions counted), every GPU moving 64 MiB at once.
double hostBandwidthGBs(int ngpu, const HostTraffic& how) {
  constexpr size_t kBytes = 64u << 20;
  const size_t n = kBytes / sizeof(uint4);
  std::vector<uint4*> buf(ngpu), dbuf(ngpu, nullptr), dbuf2(ngpu, nullptr);
  std::vector<unsigned*> sink(ngpu);
  std::vector<cudaStream_t> s(ngpu), s2(ngpu);
  std::vector<cudaEvent_t> e0(ngpu), e1(ngpu), e2(ngpu);
  for (int d = 0; d < ngpu; ++d) {
    CK(cudaSetDevice(d));
    CK(cudaHostAlloc(&buf[d], kBytes, cudaHostAllocMapped | cudaHostAllocPortable));
    CK(cudaMalloc(&sink[d], sizeof(unsigned)));
    if (how.copy_engine) {
      CK(cudaMalloc(&dbuf[d], kBytes));
      CK(cudaMalloc(&dbuf2[d], kBytes));
    }
    CK(cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2[d], cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0[d]));
    CK(cudaEventCreate(&e1[d]));
    CK(cudaEventCreate(&e2[d]));
  }
  double worst = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    for (int d = 0; d < ngpu; ++d) {
      CK(cudaSetDevice(d));
      CK(cudaEventRecord(e0[d], s[d]));
      // Each GPU reads the buffer the next one writes: host memory another device touches.
      uint4* theirs = buf[(d + 1) % ngpu];
      if (!how.copy_engine) {
        hostStream<<<264, 512, 0, s[d]>>>(how.writers4, theirs, buf[d], n, sink[d]);
        CK(cudaGetLastError());
      } else {
        CK(cudaStreamWaitEvent(s2[d], e0[d], 0));
        if (how.d2h) CK(cudaMemcpyAsync(buf[d], dbuf[d], kBytes, cudaMemcpyDeviceToHost, s[d]));
        if (how.h2d) CK(cudaMemcpyAsync(dbuf2[d], theirs, kBytes, cudaMemcpyHostToDevice, s2[d]));
        CK(cudaEventRecord(e2[d], s2[d]));
        CK(cudaStreamWaitEvent(s[d], e2[d], 0));
      }
      CK(cudaEventRecord(e1[d], s[d]));
    }
    double slowest = 0;
    for (int d = 0; d < ngpu; ++d) {
      CK(cudaSetDevice(d));
      CK(cudaEventSynchronize(e1[d]));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0[d], e1[d]));
      slowest = std::max(slowest, static_cast<double>(ms));
    }
    if (rep > 0) worst = std::min(worst, slowest);  // the first rep warms the mappings up
  }
  for (int d = 0; d < ngpu; ++d) {
    CK(cudaSetDevice(d));
    CK(cudaFreeHost(buf[d]));
    CK(cudaFree(sink[d]));
    if (dbuf[d]) CK(cudaFree(dbuf[d]));
    if (dbuf2[d]) CK(cudaFree(dbuf2[d]));
    CK(cudaStreamDestroy(s[d]));
    CK(cudaStreamDestroy(s2[d]));
    CK(cudaEventDestroy(e0[d]));
    CK(cudaEventDestroy(e1[d]));
    CK(cudaEventDestroy(e2[d]));
  }
  const double moved = how.copy_engine && how.d2h && how.h2d ? 2.0 * kBytes : kBytes;
  return moved / (worst * 1e-3) / 1e9;
}

}  // namespace floor_probe
