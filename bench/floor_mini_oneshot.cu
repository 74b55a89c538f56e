// tpcomm-floor's minimal one-shot all-reduce between two GPUs and its variants (floor_probes.cuh):
// what each piece of the library's kernel costs against the kernel-boundary floors.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "bench/floor_probes.cuh"

namespace floor_probe {

__global__ void miniOneShot(int how, int baked_slot, const uint4* fresh, uint4* io, uint4* mine,
                            uint4* theirs, State* st, unsigned* failed) {
  if (how & kTriggerEarly) triggerDependents();
  waitPrimary();
  if ((how & kOnlyBlock0) && blockIdx.x != 0) return;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;  // this thread's vector
  const int nvec = gridDim.x * blockDim.x;              // a slot's vectors
  const uint4 x = (how & kFreshInput) ? fresh[t] : io[t];
  int slot = baked_slot;
  unsigned long long e = 0;
  if (!(how & kSlotBaked)) {
    __shared__ unsigned long long s_e;
    if (t == 0) {
      unsigned ab = 0;
      if (how & kAbortLoad) ab = *reinterpret_cast<volatile unsigned*>(&st->abort);
      asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(e) : "l"(&st->epoch) : "memory");
      s_e = ab ? ~0ull : e;
    }
    __syncthreads();
    e = s_e;
    slot = static_cast<int>(e % kMiniSlots);
  }
  unsigned long long t0 = 0, now = 0;
  if (how & kTimerFirst) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0)::"memory");
  theirs[slot * nvec + t] = x;
  if (!(how & kTriggerEarly)) triggerDependents();
  uint4 y;
  if (!(how & kTimerFirst)) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0)::"memory");
  for (;;) {
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(y.x), "=r"(y.y), "=r"(y.z), "=r"(y.w)
                 : "l"(mine + slot * nvec + t));
    if (y.x != 0xFFFFFFFFu && y.y != 0xFFFFFFFFu && y.z != 0xFFFFFFFFu && y.w != 0xFFFFFFFFu) break;
    if (how & kPollPause) __nanosleep(64);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - t0 > 1000000000ull) {  // 1 s: a broken variant must not hang the machine
      *failed = 1;
      return;
    }
  }
  mine[slot * nvec + t] = make_uint4(~0u, ~0u, ~0u, ~0u);
  const float2 a = make_float2(__uint_as_float(x.x) + __uint_as_float(y.x),
                               __uint_as_float(x.y) + __uint_as_float(y.y));
  const float2 b = make_float2(__uint_as_float(x.z) + __uint_as_float(y.z),
                               __uint_as_float(x.w) + __uint_as_float(y.w));
  io[t] = make_uint4(__float_as_uint(a.x), __float_as_uint(a.y), __float_as_uint(b.x),
                     __float_as_uint(b.y));
  if (!(how & kSlotBaked) && t == 0)
    *reinterpret_cast<volatile unsigned long long*>(&st->epoch) = e + 1;
}

// Replays both GPUs' graphs at once, kReps times after two warm-up replays: the median us per
// call on GPU 0.
double replayMedianUs(const cudaGraphExec_t* ge, const cudaStream_t* s, const cudaEvent_t* a,
                      const cudaEvent_t* b) {
  std::vector<double> us;
  for (int r = 0; r < kReps + 2; ++r) {
    for (int d = 0; d < 2; ++d) {
      CK(cudaSetDevice(d));
      CK(cudaEventRecord(a[d], s[d]));
      CK(cudaGraphLaunch(ge[d], s[d]));
      CK(cudaEventRecord(b[d], s[d]));
    }
    for (int d = 0; d < 2; ++d) {
      CK(cudaSetDevice(d));
      CK(cudaEventSynchronize(b[d]));
    }
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a[0], b[0]));
    if (r >= 2) us.push_back(ms * 1000.0 / kChain);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

// us per call of miniOneShot on a grid of `blocks` x `threads` (a vector each), both GPUs
// running a graph of kChain calls at once (GPU 0's time).
double miniOneShotUs(int how, int blocks, int threads) {
  if (blocks > 1) how |= kSlotBaked;  // one epoch word would need the library's arrival counter
  const int nvec = blocks * threads;
  const size_t slot_bytes = kMiniSlots * nvec * sizeof(uint4);
  uint4 *io[2], *fresh[2], *slots[2];
  State* st[2];
  unsigned* failed[2];
  cudaStream_t s[2];
  cudaGraphExec_t ge[2];
  cudaEvent_t a[2], b[2];
  for (int d = 0; d < 2; ++d) {
    CK(cudaSetDevice(d));
    const cudaError_t e = cudaDeviceEnablePeerAccess(1 - d, 0);
    (void)cudaGetLastError();
    if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) return -1;
    CK(cudaMalloc(&io[d], nvec * sizeof(uint4)));
    CK(cudaMalloc(&fresh[d], nvec * sizeof(uint4)));
    CK(cudaMalloc(&slots[d], slot_bytes));
    CK(cudaMalloc(&st[d], sizeof(State)));
    CK(cudaMallocManaged(&failed[d], sizeof(unsigned)));
    *failed[d] = 0;
    CK(cudaMemset(io[d], 0, nvec * sizeof(uint4)));
    CK(cudaMemset(fresh[d], 0, nvec * sizeof(uint4)));
    CK(cudaMemset(slots[d], 0xFF, slot_bytes));
    CK(cudaMemset(st[d], 0, sizeof(State)));
    CK(cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking));
    CK(cudaEventCreate(&a[d]));
    CK(cudaEventCreate(&b[d]));
  }
  for (int d = 0; d < 2; ++d) {
    CK(cudaSetDevice(d));
    CK(cudaDeviceSynchronize());
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(static_cast<unsigned>(blocks));
    cfg.blockDim = dim3(static_cast<unsigned>(threads));
    cfg.stream = s[d];
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(s[d], cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kChain; ++i)
      CK(cudaLaunchKernelEx(&cfg, miniOneShot, how, i % kMiniSlots,
                            static_cast<const uint4*>(fresh[d]), io[d], slots[d], slots[1 - d],
                            st[d], failed[d]));
    CK(cudaStreamEndCapture(s[d], &g));
    CK(cudaGraphInstantiate(&ge[d], g, 0));
    CK(cudaGraphDestroy(g));
  }
  const double us = replayMedianUs(ge, s, a, b);
  const bool bad = *failed[0] || *failed[1];
  for (int d = 0; d < 2; ++d) {
    CK(cudaSetDevice(d));
    CK(cudaGraphExecDestroy(ge[d]));
    CK(cudaFree(io[d]));
    CK(cudaFree(fresh[d]));
    CK(cudaFree(slots[d]));
    CK(cudaFree(st[d]));
    CK(cudaFree(failed[d]));
    CK(cudaStreamDestroy(s[d]));
    CK(cudaEventDestroy(a[d]));
    CK(cudaEventDestroy(b[d]));
  }
  return bad ? -1 : us;
}

}  // namespace floor_probe
