// Arguments a kernel must never see (issue 20): host or another GPU's buffers, a destroyed
// communicator's handle after a new one took its memory, an Explain count that overflows, and a
// stream of another GPU while it captures. Each is refused with its code before any launch; the
// kinds of memory tpcomm accepts besides device memory (pinned host, managed) give right results.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "tests/gpu/harness.h"

namespace tpcomm::test {
namespace {

constexpr size_t kCount = 1024;  // fp32 elements

void expectRefused(tpcommResult_t got, tpcommResult_t want, const std::vector<std::string>& words) {
  const std::string msg = tpcommGetLastError();
  EXPECT_EQ(got, want) << msg;
  for (const std::string& w : words)
    EXPECT_NE(msg.find(w), std::string::npos) << "message lacks '" << w << "': " << msg;
}

std::string ptrText(const void* p) {
  char s[32];
  snprintf(s, sizeof(s), "%p", p);
  return s;
}

// Every rank's send holds rank + 1 everywhere; runs one call per rank and checks recv.
void runAndCheck(Group& g, const std::vector<float*>& send, const std::vector<float*>& recv) {
  const float want = g.world * (g.world + 1) / 2.f;
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    std::vector<float> h(kCount, static_cast<float>(r + 1));
    ASSERT_EQ(cudaMemcpy(send[r], h.data(), kCount * 4, cudaMemcpyDefault), cudaSuccess);
  }
  for (int r = 0; r < g.world; ++r)
    ASSERT_EQ(tpcommAllReduce(send[r], recv[r], kCount, tpcommFloat32, tpcommSum, g.comms[r],
                              g.streams[r]),
              tpcommSuccess)
        << tpcommGetLastError();
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    ASSERT_EQ(cudaStreamSynchronize(g.streams[r]), cudaSuccess);
    std::vector<float> h(kCount);
    ASSERT_EQ(cudaMemcpy(h.data(), recv[r], kCount * 4, cudaMemcpyDefault), cudaSuccess);
    for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(h[i], want) << "rank " << r << " at " << i;
  }
}

std::vector<float*> asFloats(const std::vector<char*>& v) {
  std::vector<float*> out;
  for (char* p : v) out.push_back(reinterpret_cast<float*>(p));
  return out;
}

// Pageable memory would fault the kernel (the CUDA context dies) or, where the GPU can page it
// in, be read through faults: refused, naming the buffer and the pointer, and the context lives.
TEST(Failure, PageableHostBuffersAreRefused) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const tpcommConfig_t cfg = configFor(tpcommAlgoAuto, 0, /*timeout_ms=*/2000);
  std::string err;
  auto g = makeGroup(2, &cfg, kCount * 4, &err);
  ASSERT_TRUE(g) << err;
  void* host = aligned_alloc(256, kCount * 4);
  ASSERT_NE(host, nullptr);
  expectRefused(tpcommAllReduce(host, g->recv[0], kCount, tpcommFloat32, tpcommSum, g->comms[0],
                                g->streams[0]),
                tpcommInvalidArgument, {"sendbuff " + ptrText(host), "pageable"});
  expectRefused(tpcommAllReduce(g->send[0], host, kCount, tpcommFloat32, tpcommSum, g->comms[0],
                                g->streams[0]),
                tpcommInvalidArgument, {"recvbuff " + ptrText(host)});
  // The fused call checks each of its buffers: a host gamma.
  const tpcommRmsNormParams_t p = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  expectRefused(tpcommAllReduceAddRmsNorm(g->send[0], g->recv[0], g->recv[0], g->send[0], host, 1,
                                          256, tpcommFloat32, &p, g->comms[0], g->streams[0]),
                tpcommInvalidArgument, {"gamma " + ptrText(host)});
  free(host);
  // Nothing was launched: the communicators still work.
  runAndCheck(*g, asFloats(g->send), asFloats(g->recv));
}

// Pinned host memory (cudaMallocHost: mapped for every GPU under unified addressing) and managed
// memory are accepted and give the right sums.
TEST(Failure, PinnedHostAndManagedBuffersWork) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  std::string err;
  auto g = makeGroup(2, nullptr, 0, &err);
  ASSERT_TRUE(g) << err;
  for (const char* kind : {"pinned", "managed"}) {
    SCOPED_TRACE(kind);
    std::vector<float*> send(2), recv(2);
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(g->devs[r]);
      if (kind[0] == 'p') {
        ASSERT_EQ(cudaMallocHost(&send[r], kCount * 4), cudaSuccess);
        ASSERT_EQ(cudaMallocHost(&recv[r], kCount * 4), cudaSuccess);
      } else {
        ASSERT_EQ(cudaMallocManaged(&send[r], kCount * 4), cudaSuccess);
        ASSERT_EQ(cudaMallocManaged(&recv[r], kCount * 4), cudaSuccess);
      }
    }
    runAndCheck(*g, send, recv);
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(g->devs[r]);
      if (kind[0] == 'p') {
        cudaFreeHost(send[r]);
        cudaFreeHost(recv[r]);
      } else {
        cudaFree(send[r]);
        cudaFree(recv[r]);
      }
    }
  }
}

// Memory mapped with the driver's virtual memory API (cuMemCreate + cuMemMap), what PyTorch's
// expandable segments allocate: device memory to cudaPointerGetAttributes, accepted.
struct VmmBuffer {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  CUmemGenericAllocationHandle handle = 0;
};

template <typename Fn>
Fn driverFn(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    return nullptr;
  return reinterpret_cast<Fn>(fn);
}

bool vmmAlloc(int dev, size_t want, VmmBuffer* b) {
  auto granularity =
      driverFn<PFN_cuMemGetAllocationGranularity_v10020>("cuMemGetAllocationGranularity");
  auto create = driverFn<PFN_cuMemCreate_v10020>("cuMemCreate");
  auto reserve = driverFn<PFN_cuMemAddressReserve_v10020>("cuMemAddressReserve");
  auto map = driverFn<PFN_cuMemMap_v10020>("cuMemMap");
  auto access = driverFn<PFN_cuMemSetAccess_v10020>("cuMemSetAccess");
  if (!granularity || !create || !reserve || !map || !access) return false;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  size_t g = 0;
  if (granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS) return false;
  b->bytes = (want + g - 1) / g * g;
  CUmemAccessDesc rw{};
  rw.location = prop.location;
  rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return create(&b->handle, b->bytes, &prop, 0) == CUDA_SUCCESS &&
         reserve(&b->ptr, b->bytes, 0, 0, 0) == CUDA_SUCCESS &&
         map(b->ptr, b->bytes, 0, b->handle, 0) == CUDA_SUCCESS &&
         access(b->ptr, b->bytes, &rw, 1) == CUDA_SUCCESS;
}

void vmmFree(const VmmBuffer& b) {
  auto unmap = driverFn<PFN_cuMemUnmap_v10020>("cuMemUnmap");
  auto release = driverFn<PFN_cuMemRelease_v10020>("cuMemRelease");
  auto unreserve = driverFn<PFN_cuMemAddressFree_v10020>("cuMemAddressFree");
  if (b.ptr && unmap) unmap(b.ptr, b.bytes);
  if (b.handle && release) release(b.handle);
  if (b.ptr && unreserve) unreserve(b.ptr, b.bytes);
}

TEST(Failure, VirtualMemoryBuffersWork) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  std::string err;
  auto g = makeGroup(2, nullptr, 0, &err);
  ASSERT_TRUE(g) << err;
  std::vector<VmmBuffer> bufs(4);
  std::vector<float*> send(2), recv(2);
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_TRUE(vmmAlloc(g->devs[r], kCount * 4, &bufs[2 * r]));
    ASSERT_TRUE(vmmAlloc(g->devs[r], kCount * 4, &bufs[2 * r + 1]));
    send[r] = reinterpret_cast<float*>(bufs[2 * r].ptr);
    recv[r] = reinterpret_cast<float*>(bufs[2 * r + 1].ptr);
  }
  runAndCheck(*g, send, recv);
  for (const VmmBuffer& b : bufs) vmmFree(b);
}

// InitAll enabled peer access, so another GPU's buffer would be read and written over the link,
// silently: refused, naming both GPUs.
TEST(Failure, AnotherGpusBufferIsRefused) {
  if (visibleGpus() < 2) GTEST_SKIP() << "needs two GPUs";
  const tpcommConfig_t cfg = configFor(tpcommAlgoAuto, 0, /*timeout_ms=*/2000);
  std::string err;
  auto g = makeGroup(2, &cfg, kCount * 4, &err);
  ASSERT_TRUE(g) << err;
  ASSERT_TRUE(g->distinctGpus());
  // Rank 1's buffer (GPU 1) handed to rank 0 (GPU 0).
  expectRefused(tpcommAllReduce(g->send[1], g->recv[0], kCount, tpcommFloat32, tpcommSum,
                                g->comms[0], g->streams[0]),
                tpcommInvalidArgument,
                {"sendbuff " + ptrText(g->send[1]), "memory of GPU 1", "on GPU 0"});
  runAndCheck(*g, asFloats(g->send), asFloats(g->recv));
}

// A destroyed communicator's memory is free; a new communicator used to land on it, and the stale
// handle then passed the registry's check and ran on the new communicator.
TEST(Failure, AStaleHandleIsRefusedAfterNewCommunicators) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  tpcommConfig_t cfg = configFor(tpcommAlgoAuto);
  cfg.ncclMode = tpcommNcclOff;  // faster init; the handles are what matters
  std::vector<tpcommComm_t> dead;
  std::set<tpcommComm_t> seen;
  std::string err;
  for (int i = 0; i < 8; ++i) {
    auto g = makeGroup(2, &cfg, 0, &err);
    ASSERT_TRUE(g) << err;
    for (tpcommComm_t c : g->comms) {
      EXPECT_EQ(seen.count(c), 0u) << "group " << i << ": a communicator took a destroyed one's "
                                   << "address";
      seen.insert(c);
      dead.push_back(c);
    }
  }  // each group destroyed its communicators
  auto live = makeGroup(2, &cfg, 0, &err);
  ASSERT_TRUE(live) << err;
  printf("18 communicators created in turn: %zu distinct addresses among the first 16\n",
         seen.size());
  for (tpcommComm_t c : dead) {
    int n = 0;
    expectRefused(tpcommCommCount(c, &n), tpcommInvalidUsage, {"destroyed communicator"});
    expectRefused(tpcommAllReduce(nullptr, nullptr, 0, tpcommFloat32, tpcommSum, c, nullptr),
                  tpcommInvalidUsage, {"destroyed communicator"});
  }
}

TEST(Failure, ExplainRefusesAnOverflowingCount) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  std::string err;
  auto g = makeGroup(2, nullptr, 0, &err);
  ASSERT_TRUE(g) << err;
  tpcommCallInfo_t info;
  expectRefused(tpcommCommExplain(g->comms[0], SIZE_MAX / 2, tpcommFloat32, &info),
                tpcommInvalidArgument, {"tpcommCommExplain", "overflows"});
  // The largest count that fits is answered by the planner, not refused as an argument.
  EXPECT_NE(tpcommCommExplain(g->comms[0], SIZE_MAX / 4, tpcommFloat32, &info),
            tpcommInvalidArgument)
      << tpcommGetLastError();
}

// A capture in global mode (PyTorch's default) of each rank's call on buffers tpcomm has not seen
// yet: the stream's GPU and the buffers are checked while capturing without invalidating it, and
// the replayed graphs give the right sums.
TEST(Failure, CapturedCallsAreCheckedWithoutBreakingTheCapture) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  std::string err;
  auto g = makeGroup(2, nullptr, kCount * 4, &err);
  ASSERT_TRUE(g) << err;
  const float want = 3.f;
  std::vector<cudaGraphExec_t> exec(2, nullptr);
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(g->devs[r]);
    std::vector<float> h(kCount, static_cast<float>(r + 1));
    ASSERT_EQ(cudaMemcpy(g->send[r], h.data(), kCount * 4, cudaMemcpyHostToDevice), cudaSuccess);
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(g->streams[r], cudaStreamCaptureModeGlobal), cudaSuccess);
    EXPECT_EQ(tpcommAllReduce(g->send[r], g->recv[r], kCount, tpcommFloat32, tpcommSum, g->comms[r],
                              g->streams[r]),
              tpcommSuccess)
        << tpcommGetLastError();
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    ASSERT_EQ(cudaStreamIsCapturing(g->streams[r], &st), cudaSuccess);
    EXPECT_EQ(st, cudaStreamCaptureStatusActive) << "the checks invalidated the capture";
    ASSERT_EQ(cudaStreamEndCapture(g->streams[r], &graph), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&exec[r], graph, 0), cudaSuccess);
    cudaGraphDestroy(graph);
  }
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaGraphLaunch(exec[r], g->streams[r]), cudaSuccess);
  }
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaStreamSynchronize(g->streams[r]), cudaSuccess);
    std::vector<float> h(kCount);
    ASSERT_EQ(cudaMemcpy(h.data(), g->recv[r], kCount * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(h[0], want);
    EXPECT_EQ(h[kCount - 1], want);
    cudaGraphExecDestroy(exec[r]);
  }
}

// A capturing stream of another GPU: launching on it would fail and invalidate the caller's
// capture; tpcomm refuses the call first, naming both GPUs, and the capture goes on.
TEST(Failure, ACapturingStreamOfAnotherGpuIsRefusedBeforeTheLaunch) {
  if (visibleGpus() < 2) GTEST_SKIP() << "needs two GPUs";
  std::string err;
  auto g = makeGroup(2, nullptr, kCount * 4, &err);
  ASSERT_TRUE(g) << err;
  ASSERT_TRUE(g->distinctGpus());
  cudaSetDevice(g->devs[1]);
  cudaStream_t other = g->streams[1];  // GPU 1's
  ASSERT_EQ(cudaStreamBeginCapture(other, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  expectRefused(
      tpcommAllReduce(g->send[0], g->recv[0], kCount, tpcommFloat32, tpcommSum, g->comms[0], other),
      tpcommInvalidArgument, {"GPU 1", "on GPU 0", "capture is still valid"});
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  ASSERT_EQ(cudaStreamIsCapturing(other, &st), cudaSuccess);
  EXPECT_EQ(st, cudaStreamCaptureStatusActive);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(other, &graph), cudaSuccess);
  if (graph) cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace tpcomm::test
