// tpcomm-floor: the physical floors an all-reduce call sits on, measured on this machine, so a
// benchmark can be read against them (docs/BENCHMARKS.md):
//   * a kernel inside a CUDA graph: empty, with programmatic dependent launch (PDL), and with the
//     loads a call cannot avoid (its input; the communicator's epoch and abort words);
//   * one-way latency of a flag between two GPUs over peer memory (NVLink/PCIe P2P) and through
//     pinned host memory, from a ping-pong of two single-thread kernels;
//   * zero-copy bandwidth between SMs and pinned host memory with every GPU streaming at once
//     (writes, reads, and both together in three proportions: what the host-memory transport
//     moves its data with), and the copy engines' bandwidth the same way, for comparison.
// Pure CUDA, no tpcomm library: it measures the machine, not our code.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/cuda_check.h"

namespace {

#define CK(call) TPCOMM_TOOL_CHECK("tpcomm-floor", call)

constexpr int kChain = 100;  // kernels per graph
constexpr int kReps = 15;

__device__ __forceinline__ void waitPrimary() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void triggerDependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

struct State {
  unsigned long long epoch;
  unsigned abort;
};

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

// A minimal one-shot all-reduce between two GPUs (by default 1 KiB: one block of 64 threads;
// fp32 zeros, a vector per thread, sentinel arrival as the library's SentinelProto), to see what
// each piece of the real kernel costs against the floor rows above. Variants (bits of `how`):
//   kSlotBaked: the slot comes from the launch argument (node i of the graph uses slot i % 4)
//               instead of an epoch word in device memory (read at entry, advanced at the end);
//               grids of more than one block always bake it (no arrival counter here);
//   kTriggerEarly: griddepcontrol.launch_dependents at entry instead of after the push;
//   kFreshInput: the input is a buffer no kernel writes (not the previous call's output);
//   kAbortLoad: a volatile load of the abort word just before the epoch's (as the library);
//   kTimerFirst: %globaltimer (the wait deadline) read before the push instead of after it;
//   kOnlyBlock0: blocks other than 0 exit at once (what a grid's size costs without its data);
//   kPollPause: 64 ns of __nanosleep between missed polls (what the polls' own traffic costs).
constexpr int kSlotBaked = 1, kTriggerEarly = 2, kFreshInput = 4, kAbortLoad = 8, kTimerFirst = 16,
              kOnlyBlock0 = 32, kPollPause = 64;
constexpr int kMiniSlots = 4, kMiniVecs = 64;

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

// us per call of miniOneShot on a grid of `blocks` x `threads` (a vector each), both GPUs
// running a graph of kChain calls at once (GPU 0's time).
double miniOneShotUs(int how, int blocks = 1, int threads = kMiniVecs) {
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
  if (bad) return -1;
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
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

// How a bandwidth measurement moves its 64 MiB per GPU: SM loads/stores (writers4 as in
// hostStream) or the copy engines (cudaMemcpyAsync device -> pinned host, host -> device, or both
// directions at once on two streams: 128 MiB moved).
struct HostTraffic {
  bool copy_engine;
  int writers4;   // SMs: 0..4 (hostStream)
  bool d2h, h2d;  // copy engines
};

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

}  // namespace

int main() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
    fprintf(stderr, "tpcomm-floor: no CUDA device\n");
    return 2;
  }
  cudaDeviceProp p{};
  CK(cudaGetDeviceProperties(&p, 0));
  printf("# tpcomm-floor on %d x %s (cc %d.%d); us per kernel in a graph of %d, median of %d\n", n,
         p.name, p.major, p.minor, kChain, kReps);
  const char* names[] = {"empty kernel", "empty kernel, PDL wait", "PDL + 1 KiB load/store",
                         "PDL + load/store + epoch/abort loads"};
  for (int m = 0; m < 4; ++m) printf("%-52s %6.2f us\n", names[m], chainUs(0, m, nullptr));
  if (n >= 2) {
    uint4* remote = nullptr;
    CK(cudaSetDevice(1));
    CK(cudaMalloc(&remote, 1024));
    CK(cudaSetDevice(0));
    const cudaError_t e = cudaDeviceEnablePeerAccess(1, 0);
    if (e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();
      printf("%-52s %6.2f us\n", "PDL + load/store + 1 KiB to a peer GPU", chainUs(0, 4, remote));
    }
    CK(cudaSetDevice(1));
    CK(cudaFree(remote));
    printf("%-52s %6.2f us\n", "one-way flag, peer memory", oneWayUs(false));
    printf("%-52s %6.2f us\n", "one-way flag, pinned host memory", oneWayUs(true));
    const struct {
      const char* name;
      int how;
    } minis[] = {
        {"minimal 1 KiB one-shot, epoch in device memory", 0},
        {"  ... slot baked into the launch", kSlotBaked},
        {"  ... epoch, trigger dependents at entry", kTriggerEarly},
        {"  ... epoch, input not the previous output", kFreshInput},
        {"  ... slot baked, input not the previous output", kSlotBaked | kFreshInput},
        {"  ... epoch, abort word loaded first", kAbortLoad},
        {"  ... epoch, deadline read before the push", kTimerFirst},
        {"  ... epoch, both (as the library's kernel)", kAbortLoad | kTimerFirst},
    };
    for (const auto& m : minis) printf("%-52s %6.2f us\n", m.name, miniOneShotUs(m.how));
    // Where a larger call's time goes: the same kernel over grids of one vector per thread
    // (slot baked), against its 1 KiB row "slot baked into the launch" above.
    const struct {
      const char* name;
      int how, blocks, threads;
    } grids[] = {
        {"minimal one-shot, 2 KiB: 1 block x 128", 0, 1, 128},
        {"  ... 2 KiB: 2 blocks x 64", 0, 2, 64},
        {"  ... 16 KiB: 8 blocks x 128 (the library's grid)", 0, 8, 128},
        {"  ... 16 KiB: 16 blocks x 64", 0, 16, 64},
        {"  ... 16 KiB: 1 block x 1024", 0, 1, 1024},
        {"  ... 16 KiB grid, blocks 1..7 exit at once", kOnlyBlock0, 8, 128},
        {"  ... 16 KiB, 64 ns pause between missed polls", kPollPause, 8, 128},
        {"  ... 64 KiB: 32 blocks x 128", 0, 32, 128},
        {"  ... 256 KiB: 128 blocks x 128", 0, 128, 128},
        {"  ... 256 KiB grid, blocks 1..127 exit at once", kOnlyBlock0, 128, 128},
        {"  ... 256 KiB, 64 ns pause between missed polls", kPollPause, 128, 128},
        {"  ... 1 MiB: 128 blocks x 512", 0, 128, 512},
    };
    for (const auto& g : grids)
      printf("%-52s %6.2f us\n", g.name, miniOneShotUs(g.how, g.blocks, g.threads));
  }
  // SM traffic is what the host transport uses; the copy engines are the other way to move data
  // between a GPU and host memory (both directions at once is the all-reduce's pattern).
  const struct {
    const char* name;
    HostTraffic how;
  } traffic[] = {
      {"SMs, writes", {false, 4, false, false}},
      {"SMs, reads", {false, 0, false, false}},
      {"SMs, 1/4 writing, 3/4 reading", {false, 1, false, false}},
      {"SMs, half writes, half reads", {false, 2, false, false}},
      {"SMs, 3/4 writing, 1/4 reading", {false, 3, false, false}},
      {"copy engines, device to host", {true, 0, true, false}},
      {"copy engines, host to device", {true, 0, false, true}},
      {"copy engines, both directions at once", {true, 0, true, true}},
  };
  for (const auto& t : traffic)
    printf("%-52s %6.1f GB/s per GPU (%d GPUs at once)\n",
           (std::string("host memory, ") + t.name).c_str(), hostBandwidthGBs(n, t.how), n);
  return 0;
}
