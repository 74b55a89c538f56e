// Two streams, one communicator (src/comm/call/stream_order.h): calls run in the order they were
// issued whatever the stream. Each rank alternates its calls between two non-blocking streams
// with no sync (the two ranks in different patterns), eagerly and in captures forked over two
// streams; every output is checked bit for bit against the host's sum. Two graphs of one
// communicator replayed at once are reported by the kernels (kernels/device/epoch_device.cuh).
// Without the ordering, the calls on the two streams run at once, read the same epoch and fill the
// same slots: wrong sums or timeouts. Several captures may be open at once, each ordered on its
// own.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "tests/gpu/harness.h"

namespace tpcomm::test {
namespace {

// bf16 counts: the lean one-shot (512: 1 KiB; 32768), the general one-shot with a partial last
// vector (4097, 131075) and a multi-step call (1572867: 3 MiB); two-shot when forced.
const size_t kCounts[] = {512, 4097, 32768, 131075, 1572867};
constexpr int kTimeoutMs = 5000;  // bounds the old code's hangs

// Small integers (|x| <= 8): every sum of two ranks is exact in bf16, so the reference is exact
// and a value from another call's slot shows (16 of 17 values differ).
std::vector<uint8_t> intInput(size_t count, uint64_t seed, int rank) {
  std::vector<uint8_t> out(count * 2);
  for (size_t i = 0; i < count; ++i)
    fromDouble(tpcommBfloat16, static_cast<double>(mix(seed * 977 + rank * 131 + i) % 17) - 8.0,
               out.data() + i * 2);
  return out;
}

// Every call's own input and output (no call reuses another's memory), on every rank.
struct Calls {
  int n = 0;
  std::vector<size_t> count, offset;  // elements
  size_t total = 0;
  std::vector<std::vector<std::vector<uint8_t>>> in;  // [call][rank]
  std::vector<char*> send, recv;                      // per rank
};

std::unique_ptr<Calls> makeCalls(const Group& g, int n, uint64_t seed) {
  auto c = std::make_unique<Calls>();
  c->n = n;
  for (int i = 0; i < n; ++i) {
    c->count.push_back(kCounts[i % 5]);
    c->offset.push_back(c->total);
    c->total += (c->count.back() + 63) / 64 * 64;  // every buffer 128-byte aligned
  }
  c->in.resize(n);
  c->send.assign(g.world, nullptr);
  c->recv.assign(g.world, nullptr);
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    if (cudaMalloc(&c->send[r], c->total * 2) != cudaSuccess ||
        cudaMalloc(&c->recv[r], c->total * 2) != cudaSuccess)
      return nullptr;
    for (int i = 0; i < n; ++i) {
      c->in[i].push_back(intInput(c->count[i], seed + i, r));
      cudaMemcpy(c->send[r] + c->offset[i] * 2, c->in[i][r].data(), c->count[i] * 2,
                 cudaMemcpyHostToDevice);
    }
  }
  return c;
}

void freeCalls(const Group& g, Calls* c) {
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    cudaFree(c->send[r]);
    cudaFree(c->recv[r]);
  }
}

// Outputs of calls [from, to) that differ from the exact sum, in bits: the number of wrong calls
// (and the first).
int wrongCalls(const Group& g, const Calls& c, std::string* first, int from = 0, int to = -1) {
  int wrong = 0;
  std::vector<uint8_t> got;
  for (int i = from; i < (to < 0 ? c.n : to); ++i) {
    const std::vector<uint8_t> ref = reference(tpcommBfloat16, c.count[i], c.in[i]);
    got.resize(ref.size());
    for (int r = 0; r < g.world; ++r) {
      cudaSetDevice(g.devs[r]);
      cudaMemcpy(got.data(), c.recv[r] + c.offset[i] * 2, got.size(), cudaMemcpyDeviceToHost);
      if (memcmp(got.data(), ref.data(), ref.size()) != 0) {
        if (wrong++ == 0)
          *first = "call " + std::to_string(i) + " (" + std::to_string(c.count[i]) +
                   " elements) on rank " + std::to_string(r);
        break;
      }
    }
  }
  return wrong;
}

// The second non-blocking stream of every rank (the harness gives each rank one).
struct SecondStreams {
  const Group& g;
  std::vector<cudaStream_t> s;
  explicit SecondStreams(const Group& grp) : g(grp), s(grp.world, nullptr) {
    for (int r = 0; r < g.world; ++r) {
      cudaSetDevice(g.devs[r]);
      cudaStreamCreateWithFlags(&s[r], cudaStreamNonBlocking);
    }
  }
  ~SecondStreams() {
    for (int r = 0; r < g.world; ++r) {
      cudaSetDevice(g.devs[r]);
      cudaStreamDestroy(s[r]);
    }
  }
};

// Rank 0 switches streams at every call, rank 1 every second call: the ranks need not agree.
cudaStream_t streamOf(const Group& g, const SecondStreams& two, int r, int i) {
  const bool second = r == 0 ? i % 2 == 1 : (i / 2) % 2 == 1;
  return second ? two.s[r] : g.streams[r];
}

// Call i of rank r, on stream s.
tpcommResult_t issue(const Group& g, const Calls& c, int r, int i, cudaStream_t s) {
  return tpcommAllReduce(c.send[r] + c.offset[i] * 2, c.recv[r] + c.offset[i] * 2, c.count[i],
                         tpcommBfloat16, tpcommSum, g.comms[r], s);
}

tpcommResult_t syncAll(const Group& g, const SecondStreams& two, std::string* err) {
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    if (cudaStreamSynchronize(g.streams[r]) != cudaSuccess ||
        cudaStreamSynchronize(two.s[r]) != cudaSuccess) {
      *err = cudaGetErrorString(cudaGetLastError());
      return tpcommUnhandledCudaError;
    }
    tpcommResult_t async = tpcommSuccess;
    tpcommCommGetAsyncError(g.comms[r], &async);
    if (async != tpcommSuccess) {
      *err = "async error " + std::to_string(async) + " on rank " + std::to_string(r);
      return async;
    }
  }
  return tpcommSuccess;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class InterleavedStreams : public ::testing::TestWithParam<int> {};

// 200 eager calls per rank, alternating streams, no host sync until the end.
TEST_P(InterleavedStreams, EveryCallExact) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const int algo = GetParam(), world = 2, ncalls = 200;
  const tpcommConfig_t cfg = configFor(algo, 0, kTimeoutMs);
  std::string err;
  auto g = makeGroup(world, &cfg, 0, &err);
  ASSERT_TRUE(g) << err;
  auto c = makeCalls(*g, ncalls, 100 + algo);
  ASSERT_TRUE(c) << "cuda allocation failed";
  SecondStreams two(*g);
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    cudaMemset(c->recv[r], 0xCD, c->total * 2);
  }
  cudaDeviceSynchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < ncalls; ++i) {
    GroupScope group;
    for (int r = 0; r < world; ++r)
      ASSERT_EQ(issue(*g, *c, r, i, streamOf(*g, two, r, i)), tpcommSuccess)
          << tpcommGetLastError();
  }
  ASSERT_EQ(syncAll(*g, two, &err), tpcommSuccess) << err;
  const double secs = secondsSince(t0);
  std::string first;
  const int wrong = wrongCalls(*g, *c, &first);
  uint64_t v[tpcommNumVariants] = {};
  tpcommCommGetVariantStats(g->comms[0], v, tpcommNumVariants);
  std::string ran;
  for (int k = 0; k < tpcommNumVariants; ++k)
    if (v[k]) ran += std::string(" ") + tpcommVariantName(k) + "=" + std::to_string(v[k]);
  printf("[streams] %s: %d calls per rank over 2 streams in %.3f s, %d wrong; ran:%s\n",
         tpcommAlgoName(algo), ncalls, secs, wrong, ran.c_str());
  EXPECT_EQ(wrong, 0) << "first wrong: " << first;
  freeCalls(*g, c.get());
}

INSTANTIATE_TEST_SUITE_P(Algo, InterleavedStreams,
                         ::testing::Values(tpcommAlgoAuto, tpcommAlgoTwoShot,
                                           tpcommAlgoHostOneShot),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::string(tpcommAlgoName(p.param));
                         });

// One capture per rank forked over both streams, calls alternating between them; the graph is
// replayed 5 times, outputs poisoned before each replay and checked after it.
TEST(StreamsCapture, ForkedCaptureReplaysExact) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const int world = 2, ncalls = 40, replays = 5;
  const tpcommConfig_t cfg = configFor(tpcommAlgoAuto, 0, kTimeoutMs);
  std::string err;
  auto g = makeGroup(world, &cfg, 0, &err);
  ASSERT_TRUE(g) << err;
  auto c = makeCalls(*g, ncalls, 500);
  ASSERT_TRUE(c) << "cuda allocation failed";
  SecondStreams two(*g);
  std::vector<cudaEvent_t> fork(world), join(world);
  std::vector<cudaGraphExec_t> exec(world);
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    cudaEventCreateWithFlags(&fork[r], cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join[r], cudaEventDisableTiming);
    ASSERT_EQ(cudaStreamBeginCapture(g->streams[r], cudaStreamCaptureModeGlobal), cudaSuccess);
    cudaEventRecord(fork[r], g->streams[r]);
    cudaStreamWaitEvent(two.s[r], fork[r], 0);
  }
  for (int i = 0; i < ncalls; ++i)
    for (int r = 0; r < world; ++r)
      ASSERT_EQ(issue(*g, *c, r, i, streamOf(*g, two, r, i)), tpcommSuccess)
          << tpcommGetLastError();
  std::vector<cudaGraph_t> graphs(world);
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    cudaEventRecord(join[r], two.s[r]);
    cudaStreamWaitEvent(g->streams[r], join[r], 0);
    ASSERT_EQ(cudaStreamEndCapture(g->streams[r], &graphs[r]), cudaSuccess);
  }
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaGraphInstantiate(&exec[r], graphs[r], 0), cudaSuccess);
    cudaGraphDestroy(graphs[r]);
  }
  int wrong = 0;
  std::string first;
  const auto t0 = std::chrono::steady_clock::now();
  for (int rep = 0; rep < replays; ++rep) {
    for (int r = 0; r < world; ++r) {
      cudaSetDevice(g->devs[r]);
      cudaMemsetAsync(c->recv[r], 0xCD, c->total * 2, g->streams[r]);
      ASSERT_EQ(cudaGraphLaunch(exec[r], g->streams[r]), cudaSuccess);
    }
    ASSERT_EQ(syncAll(*g, two, &err), tpcommSuccess) << "replay " << rep << ": " << err;
    wrong += wrongCalls(*g, *c, &first);
  }
  printf(
      "[streams] forked capture: %d calls per rank over 2 streams, %d replays in %.3f s, %d "
      "wrong call outputs\n",
      ncalls, replays, secondsSince(t0), wrong);
  EXPECT_EQ(wrong, 0) << "first wrong: " << first;
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    cudaGraphExecDestroy(exec[r]);
    cudaEventDestroy(fork[r]);
    cudaEventDestroy(join[r]);
  }
  freeCalls(*g, c.get());
}

// A stream capturing in global mode, forked into a second stream inside the capture. The fork
// stream and the events are made before and destroyed after every capture of the test (neither
// is allowed while a stream captures in global mode).
struct ForkedCapture {
  cudaStream_t origin = nullptr, fork = nullptr;
  cudaEvent_t forked = nullptr, joined = nullptr;
  bool make() {
    return cudaStreamCreateWithFlags(&fork, cudaStreamNonBlocking) == cudaSuccess &&
           cudaEventCreateWithFlags(&forked, cudaEventDisableTiming) == cudaSuccess &&
           cudaEventCreateWithFlags(&joined, cudaEventDisableTiming) == cudaSuccess;
  }
  bool begin(cudaStream_t o) {
    origin = o;
    return cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal) == cudaSuccess &&
           cudaEventRecord(forked, origin) == cudaSuccess &&
           cudaStreamWaitEvent(fork, forked, 0) == cudaSuccess;
  }
  cudaStream_t streamFor(int i) const { return i % 2 ? fork : origin; }
  cudaGraph_t end() {  // joins the fork and ends the capture
    cudaGraph_t g = nullptr;
    cudaEventRecord(joined, fork);
    cudaStreamWaitEvent(origin, joined, 0);
    if (cudaStreamEndCapture(origin, &g) != cudaSuccess) g = nullptr;
    return g;
  }
  void destroy() {
    cudaStreamDestroy(fork);
    cudaEventDestroy(forked);
    cudaEventDestroy(joined);
  }
};

// Two captures open at once on every rank (X on the rank's stream, Y on a stream of its own that
// is destroyed right after the capture), each forked over two streams, taking calls in turn:
// each capture keeps its own order, the graphs replay exactly (X then Y), and the communicator's
// next capture, after Y's streams are gone, asks nothing of them.
TEST(StreamsCapture, InterleavedOpenCapturesEachOrdered) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const int world = 2, ncalls = 24;
  const tpcommConfig_t cfg = configFor(tpcommAlgoAuto, 0, kTimeoutMs);
  std::string err;
  auto g = makeGroup(world, &cfg, 0, &err);
  ASSERT_TRUE(g) << err;
  auto c = makeCalls(*g, ncalls + 2, 900);
  ASSERT_TRUE(c) << "cuda allocation failed";
  std::vector<cudaStream_t> ys(world, nullptr);
  std::vector<ForkedCapture> x(world), y(world);
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaStreamCreateWithFlags(&ys[r], cudaStreamNonBlocking), cudaSuccess);
    ASSERT_TRUE(x[r].make() && y[r].make());
  }
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_TRUE(x[r].begin(g->streams[r]));
    ASSERT_TRUE(y[r].begin(ys[r]));
  }
  // Calls 0, 2, 4.. into X and 1, 3, 5.. into Y; in each, on both streams in turn.
  for (int i = 0; i < ncalls; ++i)
    for (int r = 0; r < world; ++r) {
      const ForkedCapture& cap = i % 2 ? y[r] : x[r];
      ASSERT_EQ(issue(*g, *c, r, i, cap.streamFor(i / 2)), tpcommSuccess)
          << "call " << i << ": " << tpcommGetLastError();
    }
  std::vector<cudaGraph_t> gx(world), gy(world);
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    gx[r] = x[r].end();
    gy[r] = y[r].end();
    ASSERT_TRUE(gx[r] && gy[r]) << "a capture failed on rank " << r;
  }
  for (int r = 0; r < world; ++r) {  // Y's streams are gone before the next capture
    cudaSetDevice(g->devs[r]);
    y[r].destroy();
    cudaStreamDestroy(ys[r]);
  }
  // The next capture, on another stream, while Y's streams are destroyed: ordered as its own.
  std::vector<ForkedCapture> z(world);
  std::vector<cudaGraph_t> gz(world);
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_TRUE(z[r].make());
  }
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_TRUE(z[r].begin(g->streams[r]));
  }
  for (int i = ncalls; i < ncalls + 2; ++i)
    for (int r = 0; r < world; ++r)
      ASSERT_EQ(issue(*g, *c, r, i, z[r].streamFor(i)), tpcommSuccess) << tpcommGetLastError();
  std::vector<cudaGraphExec_t> ex(world), ey(world), ez(world);
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    gz[r] = z[r].end();
    ASSERT_TRUE(gz[r]);
  }
  for (int r = 0; r < world; ++r) {  // no capture open: instantiation is refused during one
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaGraphInstantiate(&ex[r], gx[r], 0), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&ey[r], gy[r], 0), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&ez[r], gz[r], 0), cudaSuccess);
    cudaGraphDestroy(gx[r]);
    cudaGraphDestroy(gy[r]);
    cudaGraphDestroy(gz[r]);
  }
  int wrong = 0;
  std::string first;
  for (int rep = 0; rep < 3; ++rep) {
    for (int r = 0; r < world; ++r) {
      cudaSetDevice(g->devs[r]);
      cudaMemsetAsync(c->recv[r], 0xCD, c->total * 2, g->streams[r]);
      ASSERT_EQ(cudaGraphLaunch(ex[r], g->streams[r]), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(ey[r], g->streams[r]), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(ez[r], g->streams[r]), cudaSuccess);
    }
    for (int r = 0; r < world; ++r) {
      cudaSetDevice(g->devs[r]);
      ASSERT_EQ(cudaStreamSynchronize(g->streams[r]), cudaSuccess);
      tpcommResult_t async = tpcommSuccess;
      tpcommCommGetAsyncError(g->comms[r], &async);
      ASSERT_EQ(async, tpcommSuccess) << "replay " << rep << " rank " << r;
    }
    wrong += wrongCalls(*g, *c, &first);
  }
  printf(
      "[streams] two open captures, %d calls interleaved over 4 streams + a third capture: %d "
      "wrong call outputs in 3 replays\n",
      ncalls, wrong);
  EXPECT_EQ(wrong, 0) << "first wrong: " << first;
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    cudaGraphExecDestroy(ex[r]);
    cudaGraphExecDestroy(ey[r]);
    cudaGraphExecDestroy(ez[r]);
    x[r].destroy();
    z[r].destroy();
  }
  freeCalls(*g, c.get());
}

// An eager call on another stream while the last eager call's stream captures is ordered after
// that call (the event recorded right after it), and a stream that carried a call may be
// destroyed before the next call (a stream per call).
TEST(StreamsCapture, EagerAroundACaptureOrdered) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const int world = 2;
  const tpcommConfig_t cfg = configFor(tpcommAlgoAuto, 0, kTimeoutMs);
  std::string err;
  auto g = makeGroup(world, &cfg, 0, &err);
  ASSERT_TRUE(g) << err;
  auto c = makeCalls(*g, 3, 900);
  ASSERT_TRUE(c) << "cuda allocation failed";
  SecondStreams two(*g);
  cudaStream_t a = g->streams[0], b = two.s[0];
  cudaGraph_t ga = nullptr;
  {
    GroupScope group;
    for (int r = 0; r < world; ++r)
      ASSERT_EQ(issue(*g, *c, r, 1, g->streams[r]), tpcommSuccess) << tpcommGetLastError();
  }
  cudaSetDevice(g->devs[0]);
  ASSERT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeRelaxed), cudaSuccess);
  cudaStream_t gone[2] = {nullptr, nullptr};
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaStreamCreateWithFlags(&gone[r], cudaStreamNonBlocking), cudaSuccess);
  }
  {
    GroupScope group;
    for (int r = 0; r < world; ++r)
      ASSERT_EQ(issue(*g, *c, r, 2, r == 0 ? b : gone[r]), tpcommSuccess) << tpcommGetLastError();
  }
  cudaSetDevice(g->devs[0]);
  ASSERT_EQ(cudaStreamEndCapture(a, &ga), cudaSuccess);
  if (ga) cudaGraphDestroy(ga);
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    cudaStreamSynchronize(gone[r]);
    cudaStreamDestroy(gone[r]);  // the communicator's next call on another stream must not touch it
  }
  {
    GroupScope group;
    for (int r = 0; r < world; ++r)
      ASSERT_EQ(issue(*g, *c, r, 0, g->streams[r]), tpcommSuccess) << tpcommGetLastError();
  }
  ASSERT_EQ(syncAll(*g, two, &err), tpcommSuccess) << err;
  std::string first;
  const int wrong = wrongCalls(*g, *c, &first, 0, 3);
  EXPECT_EQ(wrong, 0) << first;
  freeCalls(*g, c.get());
}

// Two graphs holding one multi-block call each, replayed at once on rank 0's two streams (rank 1
// does nothing, so both kernels wait and their arrivals overlap): the kernels report
// tpcommInvalidUsage at once, where without the check both wait for rank 1 until the timeout.
TEST(StreamsCapture, ConcurrentReplaysReported) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const int world = 2;
  const size_t count = 4u << 20;  // 8 MiB of bf16: a multi-block one-shot
  const tpcommConfig_t cfg = configFor(tpcommAlgoOneShot, 0, kTimeoutMs);
  std::string err;
  auto g = makeGroup(world, &cfg, count * 2, &err);
  ASSERT_TRUE(g) << err;
  tpcommCallInfo_t info;
  ASSERT_EQ(tpcommCommExplain(g->comms[0], count, tpcommBfloat16, &info), tpcommSuccess);
  ASSERT_GT(info.blocks, 1) << "the check needs a multi-block call";
  SecondStreams two(*g);
  cudaSetDevice(g->devs[0]);
  cudaGraphExec_t exec[2];
  const cudaStream_t s[2] = {g->streams[0], two.s[0]};
  for (int k = 0; k < 2; ++k) {  // one capture after the other: both are accepted
    ASSERT_EQ(cudaStreamBeginCapture(s[k], cudaStreamCaptureModeRelaxed), cudaSuccess);
    ASSERT_EQ(tpcommAllReduce(g->send[0], g->recv[0], count, tpcommBfloat16, tpcommSum, g->comms[0],
                              s[k]),
              tpcommSuccess)
        << tpcommGetLastError();
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(s[k], &graph), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&exec[k], graph, 0), cudaSuccess);
    cudaGraphDestroy(graph);
  }
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(cudaGraphLaunch(exec[0], s[0]), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec[1], s[1]), cudaSuccess);
  cudaStreamSynchronize(s[0]);
  cudaStreamSynchronize(s[1]);
  const double secs = secondsSince(t0);
  tpcommResult_t async = tpcommSuccess;
  tpcommCommGetAsyncError(g->comms[0], &async);
  printf("[streams] two graphs of %d blocks replayed at once: async error %d after %.3f s\n",
         info.blocks, static_cast<int>(async), secs);
  EXPECT_EQ(async, tpcommInvalidUsage);
  EXPECT_LT(secs, kTimeoutMs / 1000.0 / 2) << "reported only by the timeout";
  EXPECT_EQ(
      tpcommAllReduce(g->send[0], g->recv[0], count, tpcommBfloat16, tpcommSum, g->comms[0], s[0]),
      tpcommInvalidUsage);
  const std::string msg = tpcommGetLastError();
  EXPECT_NE(msg.find("ran at the same time"), std::string::npos) << msg;
  for (auto& e : exec) cudaGraphExecDestroy(e);
}

}  // namespace
}  // namespace tpcomm::test
