// The copy-engine one-shot (oneshot_ce, src/kernels/oneshot_ce.cu) beyond the shared matrices
// (test_correctness, test_graph, test_failure, test_deadline, test_mismatch run it too):
//  * a graph of ONE call replayed back to back, each replay with new inputs: every replay's step
//    lands in the same slot (a captured copy's address is fixed), so only the guard's wait for
//    the peers' acknowledgements keeps a fast rank from overwriting the region a slow one is
//    still reducing. Checked on the GPU after every replay.
//  * ranks sharing one GPU at worlds 3..8 with the default (wide) grids, one step and many: only
//    one-block kernels may wait for a peer, or the waiting ranks' blocks cover every SM while the
//    last rank's same-device copies wait for room (docs/PROTOCOL.md, "Copy engines").
//  * what a copy node costs and what a call costs per size, next to the push one-shot (printed:
//    with ranks sharing one GPU a "peer copy" is a same-device copy, so this is the copy engine's
//    and the graph node's overhead, not a link).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/gpu/harness.h"
#include "tests/gpu/replay_stamp_kernel.h"

namespace tpcomm::test {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;
using Clock = std::chrono::steady_clock;

double usSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// Captures `body(r)` on every rank's stream (global mode: all captures end before any
// instantiation) and instantiates the graphs.
template <typename Body>
::testing::AssertionResult captureEach(Group& g, Body body, std::vector<cudaGraphExec_t>* exec) {
  exec->assign(static_cast<size_t>(g.world), nullptr);
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    if (cudaStreamBeginCapture(g.streams[r], cudaStreamCaptureModeGlobal) != cudaSuccess)
      return ::testing::AssertionFailure() << "begin capture, rank " << r;
  }
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    const tpcommResult_t res = body(r);
    if (res != tpcommSuccess)
      return ::testing::AssertionFailure() << "rank " << r << ": " << tpcommGetLastError();
  }
  std::vector<cudaGraph_t> graphs(static_cast<size_t>(g.world));
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    if (cudaStreamEndCapture(g.streams[r], &graphs[r]) != cudaSuccess)
      return ::testing::AssertionFailure() << "end capture, rank " << r;
  }
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    const cudaError_t e = cudaGraphInstantiate(&(*exec)[r], graphs[r], 0);
    cudaGraphDestroy(graphs[r]);
    if (e != cudaSuccess)
      return ::testing::AssertionFailure()
             << "instantiate, rank " << r << ": " << cudaGetErrorString(e);
  }
  return ::testing::AssertionSuccess();
}

// Replays every rank's graph `reps` times (round robin) and waits; the wall time per replay.
double replay(Group& g, const std::vector<cudaGraphExec_t>& exec, int reps) {
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < reps; ++i)
    for (int r = 0; r < g.world; ++r) {
      cudaSetDevice(g.devs[r]);
      cudaGraphLaunch(exec[r], g.streams[r]);
    }
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    cudaStreamSynchronize(g.streams[r]);
  }
  return usSince(t0) / reps;
}

TEST(OneShotCe, OneCallGraphReusesItsSlotBehindTheGuard) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  constexpr int kReps = 2000;
  for (int world : {2, 4}) {
    // One step exactly: a source's whole region of the default 16 MiB slots.
    const size_t n = 16 * MiB / world / sizeof(float);
    const tpcommConfig_t cfg = configFor(tpcommAlgoOneShotCe, 0, 5000);
    std::string err;
    auto g = makeGroup(world, &cfg, n * sizeof(float), &err);
    ASSERT_TRUE(g) << err;
    std::vector<unsigned*> counter(static_cast<size_t>(world));
    std::vector<unsigned long long*> bad(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
      cudaSetDevice(g->devs[r]);
      ASSERT_EQ(cudaMalloc(&counter[r], sizeof(unsigned)), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&bad[r], sizeof(unsigned long long)), cudaSuccess);
      cudaMemset(counter[r], 0, sizeof(unsigned));
      cudaMemset(bad[r], 0, sizeof(unsigned long long));
      cudaDeviceSynchronize();
    }
    std::vector<cudaGraphExec_t> exec;
    ASSERT_TRUE(captureEach(
        *g,
        [&](int r) {
          float* in = reinterpret_cast<float*>(g->send[r]);
          float* out = reinterpret_cast<float*>(g->recv[r]);
          launchStamp(in, n, counter[r], r, g->streams[r]);
          const tpcommResult_t res =
              tpcommAllReduce(in, out, n, tpcommFloat32, tpcommSum, g->comms[r], g->streams[r]);
          launchCheckSum(out, n, counter[r], world, bad[r], g->streams[r]);
          launchBump(counter[r], g->streams[r]);
          return res;
        },
        &exec));
    tpcommCallInfo_t info{};
    tpcommCommGetLastCall(g->comms[0], &info);
    EXPECT_EQ(info.variant, tpcommVariantP2pOneShotCe) << tpcommVariantName(info.variant);
    const double us = replay(*g, exec, kReps);
    for (int r = 0; r < world; ++r) {
      cudaSetDevice(g->devs[r]);
      unsigned long long b = 0;
      unsigned k = 0;
      cudaMemcpy(&b, bad[r], sizeof(b), cudaMemcpyDeviceToHost);
      cudaMemcpy(&k, counter[r], sizeof(k), cudaMemcpyDeviceToHost);
      EXPECT_EQ(k, static_cast<unsigned>(kReps)) << "rank " << r;
      EXPECT_EQ(b, 0ull) << "world " << world << " rank " << r
                         << ": elements of a replay that read another replay's data";
      tpcommResult_t async = tpcommSuccess;
      tpcommCommGetAsyncError(g->comms[r], &async);
      EXPECT_EQ(async, tpcommSuccess) << "rank " << r << ": " << tpcommGetLastError();
      cudaGraphExecDestroy(exec[r]);
      cudaFree(counter[r]);
      cudaFree(bad[r]);
    }
    printf("[ ce guard ] world %d: %d replays of one %zu-byte call (one slot), %.1f us each\n",
           world, kReps, n * sizeof(float), us);
  }
}

// Eager calls whose grids cover the GPU's SMs, every world from 3: 256 KiB fp32 is 128 blocks a
// rank. When the reduce kernel's grid waited for the flags, every such world timed out at its
// first call of this size (its last rank never started: its copies had no room among the
// others' spinning blocks), while worlds 2 passed. Then calls of several steps on the default
// slots, and of dozens on small slots (every step its guard, copies, wait and reduce). One host
// thread enqueues a rank's whole call before the next rank's, and the call's first wait kernel
// waits for ranks not enqueued yet: a call must fit CUDA's launch queue (about a thousand
// operations a stream; a full one blocks the thread until that wait times out). 1 MiB on 256 KiB
// slots is 33 steps of 17 operations at world 8, 561 operations.
TEST(OneShotCe, WideGridsWithRanksSharingAGpu) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  struct Slots {
    size_t buffer_bytes;  // 0: the default 16 MiB
    std::vector<size_t> counts;
  };
  const Slots slots[] = {{0, {65536, 1u << 20, (4u << 20) + 5}}, {256 * KiB, {(1u << 18) + 3}}};
  for (int world = 3; world <= 8; ++world) {
    for (const Slots& sl : slots) {
      tpcommConfig_t cfg = configFor(tpcommAlgoOneShotCe, 0, 3000);
      cfg.bufferBytes = sl.buffer_bytes;
      std::string err;
      auto g = makeGroup(world, &cfg, 16 * MiB + 64, &err);
      ASSERT_TRUE(g) << err;
      const Clock::time_point t0 = Clock::now();
      int widest = 0;
      size_t most_steps = 0;
      for (size_t i = 0; i < sl.counts.size(); ++i) {
        Case c{tpcommFloat32, sl.counts[i], i % 2 == 1, 0, 4242u + i};
        const std::string name = caseName(c, tpcommAlgoOneShotCe, world) +
                                 (sl.buffer_bytes ? " (256 KiB slots)" : " (default slots)");
        const Outcome o = runCase(*g, c);
        ASSERT_EQ(o.result, tpcommSuccess) << name << ": " << o.describe();
        EXPECT_EQ(o.wrong, 0u) << name << ": " << o.describe();
        EXPECT_TRUE(o.ranks_agree) << name << ": ranks' outputs differ";
        tpcommCallInfo_t info{};
        ASSERT_EQ(tpcommCommGetLastCall(g->comms[0], &info), tpcommSuccess);
        EXPECT_EQ(info.variant, tpcommVariantP2pOneShotCe) << tpcommVariantName(info.variant);
        widest = std::max(widest, info.blocks);
        // A step is a source's region of a slot (SlotCapacity::oneshot_step_bytes).
        const size_t region = (sl.buffer_bytes ? sl.buffer_bytes : 16 * MiB) / world / 16 * 16;
        most_steps = std::max(most_steps, (c.count * sizeof(float) + region - 1) / region);
      }
      printf(
          "[ ce wide  ] world %d, %s slots: %zu calls in %.0f ms, widest grid %d blocks, up "
          "to %zu steps a call\n",
          world, sl.buffer_bytes ? "256 KiB" : "16 MiB", sl.counts.size(), usSince(t0) / 1000,
          widest, most_steps);
    }
  }
}

// Printed, not asserted: the numbers the policy would need before auto may pick oneshot_ce.
TEST(OneShotCe, CopyNodeLatencyAndCallCost) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  constexpr int kCalls = 20, kReps = 50;
  // (a) A copy node alone: a graph of 100 dependent 8-byte device-to-device copies.
  {
    cudaSetDevice(0);
    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    void *a = nullptr, *b = nullptr;
    ASSERT_EQ(cudaMalloc(&a, 16), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&b, 16), cudaSuccess);
    cudaGraph_t graph;
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    for (int i = 0; i < 100; ++i)
      cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, 8, cudaMemcpyDeviceToDevice, s);
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    cudaGraphExec_t exec;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    cudaGraphLaunch(exec, s);
    cudaStreamSynchronize(s);
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < kReps; ++i) cudaGraphLaunch(exec, s);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    printf("[ ce cost  ] an 8-byte device-to-device copy node in a graph: %.2f us\n",
           usSince(t0) / kReps / 100);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaFree(a);
    cudaFree(b);
    cudaStreamDestroy(s);
  }
  // (b) A call per size in graphs, world 2: the copy-engine one-shot next to the push one-shot.
  const size_t sizes[] = {1 * KiB, 14 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 8 * MiB};
  for (int algo : {tpcommAlgoOneShot, tpcommAlgoOneShotCe}) {
    const tpcommConfig_t cfg = configFor(algo, 0, 5000);
    std::string err;
    auto g = makeGroup(2, &cfg, 8 * MiB, &err);
    ASSERT_TRUE(g) << err;
    for (size_t bytes : sizes) {
      const size_t n = bytes / 2;  // bf16
      std::vector<cudaGraphExec_t> exec;
      ASSERT_TRUE(captureEach(
          *g,
          [&](int r) {
            tpcommResult_t res = tpcommSuccess;
            for (int i = 0; i < kCalls && res == tpcommSuccess; ++i)
              res = tpcommAllReduce(g->send[r], g->recv[r], n, tpcommBfloat16, tpcommSum,
                                    g->comms[r], g->streams[r]);
            return res;
          },
          &exec));
      replay(*g, exec, 2);  // warm
      const double us = replay(*g, exec, kReps) / kCalls;
      tpcommCallInfo_t info{};
      tpcommCommGetLastCall(g->comms[0], &info);
      printf("[ ce cost  ] %-10s %8zu bytes: %7.2f us a call in graphs, 2 ranks on %s (%s)\n",
             tpcommAlgoName(algo), bytes, us, g->distinctGpus() ? "two GPUs" : "one GPU",
             tpcommVariantName(info.variant));
      for (int r = 0; r < 2; ++r) {
        tpcommResult_t async = tpcommSuccess;
        tpcommCommGetAsyncError(g->comms[r], &async);
        EXPECT_EQ(async, tpcommSuccess) << tpcommAlgoName(algo) << " " << bytes;
        cudaGraphExecDestroy(exec[r]);
      }
    }
  }
}

}  // namespace
}  // namespace tpcomm::test
