// tpcomm-ce-probe: would the copy engines make a faster host-memory all-reduce than the SMs?
//
// The host transport's bulk one-shot (host_bulk) writes each GPU's data into pinned host memory
// with SM stores, fences, sets a flag, and only then do the peers read it: at 1 MiB on 2x H200 the
// write phase (~22 us) and the read phase (~13 us) do not overlap, and splitting the call into
// steps lost every time (each step costs a block a system-scope fence and a flag round trip;
// docs/BENCHMARKS.md). Here a GPU's data goes to host memory by cudaMemcpyAsync on a second
// stream instead, in chunks, each followed by a small copy that sets the chunk's blocks' flags; a
// kernel on the first stream runs at the same time, polls each flag and reads and reduces the
// peer's chunk while the rest is still being written. No SM fence is needed: a stream's copies
// complete in order.
//
// Reusing the host buffer in the next call needs to know the peer has finished reading it. The
// copies are baked into a CUDA graph (fixed addresses), so slots cannot rotate by epoch as the
// kernels' do; instead each reading block acknowledges with the call's sequence number, and each
// block waits for the peer's acknowledgement of its own share before it exits (the next call's
// copies start after this kernel). Without that wait (tried) the next call's copies overwrote
// data still being read: wrong results and timeouts. Setting the flags with stream memory
// operations instead of a copy (cuStreamBatchMemOp, write-value) was tried as well: a batch of
// more than one operation was refused in a capture (CUDA_ERROR_INVALID_VALUE, driver 580), and one
// flag per chunk was no faster than the copy.
//
// Measured on 2x H200 (docs/BENCHMARKS.md): far slower than the SM protocols at every size tried
// (64 KiB: 20 us at best, against 8 for host LL), and every chunk added 10-30 us: the copies'
// own latency in a graph, not the link, decides.
//
// Both GPUs run a graph of kCalls calls at once; out = in + 3 * peer's in, in 32-bit integers,
// with the output of call i the input of call i+1, so every call's data differs and a stale read
// shows up in the check against a host simulation of every call. Pure CUDA, no tpcomm library.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/cuda_check.h"

namespace {

#define CK(call) TPCOMM_TOOL_CHECK("tpcomm-ce-probe", call)

constexpr int kCalls = 40;  // calls per graph; even, so the ping-pong buffers come back
constexpr int kReps = 11;
constexpr int kThreads = 512;
constexpr int kMaxBlocks = 256;
constexpr size_t kMaxBytes = 2u << 20;
constexpr size_t kMaxVecs = kMaxBytes / sizeof(uint4);

// One per GPU, in pinned host memory mapped into both.
struct HostSide {
  uint4 outbox[kMaxVecs];      // this GPU's input, written by its copy engine
  unsigned flags[kMaxBlocks];  // 1: share b is in the outbox (copy engine); 0: read (the peer)
  unsigned acks[kMaxBlocks];   // seq: this GPU has read its peer's share b of call seq
};

__device__ __forceinline__ unsigned long long nowNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Waits (thread 0) until *p == want; false after 1 s (a broken variant must not hang the machine).
__device__ bool await(const unsigned* p, unsigned want) {
  const unsigned long long t0 = nowNs();
  for (;;) {
    unsigned v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    if (v == want) return true;
    if (nowNs() - t0 > 1000000000ull) return false;
  }
}

__global__ void __launch_bounds__(kThreads)
    ceReduce(const uint4* in, uint4* out, HostSide* mine, HostSide* theirs, unsigned* seqs,
             unsigned vpb, unsigned* failed) {
  __shared__ unsigned s_seq;
  __shared__ int s_ok;
  const unsigned b = blockIdx.x;
  if (threadIdx.x == 0) {
    s_seq = seqs[b] + 1;
    seqs[b] = s_seq;
    s_ok = await(&theirs->flags[b], 1u);
    if (!s_ok) atomicOr(failed, 1u);
  }
  __syncthreads();
  if (!s_ok) return;
  const size_t first = static_cast<size_t>(b) * vpb;
  for (unsigned i = threadIdx.x; i < vpb; i += 2 * kThreads) {
    uint4 p[2], x[2];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const unsigned j = i + u * kThreads;
      if (j >= vpb) continue;
      asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(p[u].x), "=r"(p[u].y), "=r"(p[u].z), "=r"(p[u].w)
                   : "l"(&theirs->outbox[first + j]));
      x[u] = in[first + j];
    }
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const unsigned j = i + u * kThreads;
      if (j >= vpb) continue;
      out[first + j] = make_uint4(x[u].x + 3u * p[u].x, x[u].y + 3u * p[u].y, x[u].z + 3u * p[u].z,
                                  x[u].w + 3u * p[u].w);
    }
  }
  __syncthreads();  // every thread's loads of the peer's outbox have returned (values used)
  if (threadIdx.x == 0) {
    asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(&theirs->flags[b]), "r"(0u)
                 : "memory");
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(&mine->acks[b]), "r"(s_seq)
                 : "memory");
    if (!await(&theirs->acks[b], s_seq)) atomicOr(failed, 1u);
  }
}

struct Gpu {
  cudaStream_t main, side;
  cudaEvent_t fork, join, t0, t1;
  uint4 *a, *b;  // ping-pong input/output
  unsigned *seqs, *ones, *failed;
  HostSide* host;
};

struct Config {
  size_t bytes;
  int chunks;
  size_t share;  // bytes per block
};

// Captures kCalls calls of GPU d into a graph.
void capture(Gpu* g, int d, const Config& k, cudaGraphExec_t* exec) {
  Gpu& m = g[d];
  const int blocks = static_cast<int>(k.bytes / k.share);
  const int bpc = blocks / k.chunks;
  const size_t chunk_bytes = k.bytes / k.chunks;
  const size_t chunk_vecs = chunk_bytes / sizeof(uint4);
  CK(cudaSetDevice(d));
  CK(cudaStreamBeginCapture(m.main, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kCalls; ++i) {
    uint4* in = i % 2 == 0 ? m.a : m.b;
    uint4* out = i % 2 == 0 ? m.b : m.a;
    CK(cudaEventRecord(m.fork, m.main));
    CK(cudaStreamWaitEvent(m.side, m.fork, 0));
    for (int c = 0; c < k.chunks; ++c) {
      CK(cudaMemcpyAsync(&m.host->outbox[c * chunk_vecs], in + c * chunk_vecs, chunk_bytes,
                         cudaMemcpyDeviceToHost, m.side));
      CK(cudaMemcpyAsync(&m.host->flags[c * bpc], m.ones, bpc * sizeof(unsigned),
                         cudaMemcpyDeviceToHost, m.side));
    }
    CK(cudaEventRecord(m.join, m.side));
    ceReduce<<<blocks, kThreads, 0, m.main>>>(in, out, m.host, g[1 - d].host, m.seqs,
                                              static_cast<unsigned>(k.share / sizeof(uint4)),
                                              m.failed);
    CK(cudaGetLastError());
    CK(cudaStreamWaitEvent(m.main, m.join, 0));
  }
  cudaGraph_t graph;
  CK(cudaStreamEndCapture(m.main, &graph));
  CK(cudaGraphInstantiate(exec, graph, 0));
  CK(cudaGraphDestroy(graph));
}

// The inputs of call 0, per GPU and element.
unsigned initial(int d, size_t e) {
  return static_cast<unsigned>(e * 2654435761u) ^ (d ? 0x9E3779B9u : 0x7F4A7C15u);
}

// us per call (median over reps of the slower GPU) and whether every output was right.
double run(Gpu* g, const Config& k, bool* ok) {
  const size_t n = k.bytes / sizeof(unsigned);
  std::vector<unsigned> x[2];
  for (int d = 0; d < 2; ++d) {
    x[d].resize(n);
    for (size_t e = 0; e < n; ++e) x[d][e] = initial(d, e);
    CK(cudaSetDevice(d));
    CK(cudaMemcpy(g[d].a, x[d].data(), k.bytes, cudaMemcpyHostToDevice));
    CK(cudaMemset(g[d].seqs, 0, kMaxBlocks * sizeof(unsigned)));
    CK(cudaMemset(g[d].failed, 0, sizeof(unsigned)));
    for (int j = 0; j < kMaxBlocks; ++j) g[d].host->flags[j] = g[d].host->acks[j] = 0;
    CK(cudaDeviceSynchronize());
  }
  cudaGraphExec_t exec[2];
  for (int d = 0; d < 2; ++d) capture(g, d, k, &exec[d]);
  std::vector<double> us;
  const int launches = kReps + 2;
  for (int r = 0; r < launches; ++r) {
    for (int d = 0; d < 2; ++d) {
      CK(cudaSetDevice(d));
      CK(cudaEventRecord(g[d].t0, g[d].main));
      CK(cudaGraphLaunch(exec[d], g[d].main));
      CK(cudaEventRecord(g[d].t1, g[d].main));
    }
    double slowest = 0;
    for (int d = 0; d < 2; ++d) {
      CK(cudaSetDevice(d));
      CK(cudaEventSynchronize(g[d].t1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, g[d].t0, g[d].t1));
      slowest = std::max(slowest, ms * 1000.0 / kCalls);
    }
    if (r >= 2) us.push_back(slowest);
  }
  // Every call of every launch, simulated.
  for (int c = 0; c < kCalls * launches; ++c)
    for (size_t e = 0; e < n; ++e) {
      const unsigned a = x[0][e], b = x[1][e];
      x[0][e] = a + 3u * b;
      x[1][e] = b + 3u * a;
    }
  *ok = true;
  std::vector<unsigned> got(n);
  for (int d = 0; d < 2; ++d) {
    CK(cudaSetDevice(d));
    CK(cudaGraphExecDestroy(exec[d]));
    unsigned failed = 0;
    CK(cudaMemcpy(&failed, g[d].failed, sizeof(unsigned), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(got.data(), g[d].a, k.bytes, cudaMemcpyDeviceToHost));
    if (failed || got != x[d]) *ok = false;
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

}  // namespace

int main() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 2) {
    fprintf(stderr, "tpcomm-ce-probe: needs two CUDA devices\n");
    return 2;
  }
  Gpu g[2];
  for (int d = 0; d < 2; ++d) {
    CK(cudaSetDevice(d));
    CK(cudaStreamCreateWithFlags(&g[d].main, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&g[d].side, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&g[d].fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&g[d].join, cudaEventDisableTiming));
    CK(cudaEventCreate(&g[d].t0));
    CK(cudaEventCreate(&g[d].t1));
    CK(cudaMalloc(&g[d].a, kMaxBytes));
    CK(cudaMalloc(&g[d].b, kMaxBytes));
    CK(cudaMalloc(&g[d].seqs, kMaxBlocks * sizeof(unsigned)));
    CK(cudaMalloc(&g[d].failed, sizeof(unsigned)));
    CK(cudaMalloc(&g[d].ones, kMaxBlocks * sizeof(unsigned)));
    std::vector<unsigned> ones(kMaxBlocks, 1u);
    CK(cudaMemcpy(g[d].ones, ones.data(), kMaxBlocks * sizeof(unsigned), cudaMemcpyHostToDevice));
    CK(cudaHostAlloc(&g[d].host, sizeof(HostSide), cudaHostAllocMapped | cudaHostAllocPortable));
  }
  printf("# tpcomm-ce-probe: 2 GPUs, copy-engine writes + SM reads through pinned host memory\n");
  printf("# us per call, graphs of %d calls, median of %d; ok = every output of every call right\n",
         kCalls, kReps);
  printf("%9s %6s %7s %9s %4s\n", "bytes", "chunks", "share", "us", "ok");
  const size_t sizes[] = {64u << 10, 256u << 10, 1u << 20, 2u << 20};
  for (size_t bytes : sizes)
    for (size_t share : {size_t{16} << 10, size_t{32} << 10, size_t{64} << 10})
      for (int chunks : {1, 2, 4}) {
        const size_t blocks = bytes / share;
        if (blocks < static_cast<size_t>(chunks) || blocks > kMaxBlocks) continue;
        bool ok = false;
        const double us = run(g, Config{bytes, chunks, share}, &ok);
        printf("%9zu %6d %6zuK %9.2f %4s\n", bytes, chunks, share >> 10, us, ok ? "yes" : "NO");
        fflush(stdout);
      }
  return 0;
}
