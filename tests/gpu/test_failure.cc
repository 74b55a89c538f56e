// Failure is a feature: a peer that never arrives is a timeout error within the deadline (and the
// communicator stays broken, saying why); bad arguments get clear codes and messages; a build
// without an image for this GPU fails at init, clearly.
#include <dirent.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "tests/gpu/harness.h"

namespace tpcomm::test {
namespace {

TEST(Failure, PeerThatNeverArrivesTimesOut) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  struct Case {
    int algo;
    size_t count;                 // bf16 elements
    size_t buffer_bytes;          // 0: default
    const char* knobs = nullptr;  // config.launchKnobs
  };
  // Auto at world 2 (the lean one-shot at 2 KiB, the split one-shot at 8 MiB), two-shot (forced:
  // auto no longer runs it at world 2), and a many-step one-shot (pushing and reducing warps
  // split: the pushers must not be left waiting for reducers that gave up); bulk over host
  // memory, single-step and split (one thread per block polls the flags, and the whole block must
  // learn of the timeout); the pull variants over peer memory (lean, split, two-shot: threads
  // poll one peer's flag each and the block learns of the timeout by a barrier reduction; at 2 KiB
  // the LL pull, every thread polling its entries, and the flag kernel with LL off).
  // Fresh communicators each.
  const Case cases[] = {{tpcommAlgoAuto, 1024, 0},
                        {tpcommAlgoAuto, size_t{4} << 20, 0},
                        {tpcommAlgoTwoShot, size_t{4} << 20, 0},
                        {tpcommAlgoOneShot, size_t{1} << 20, 256u << 10},
                        {tpcommAlgoHostBulk, 1024, 0},
                        {tpcommAlgoHostBulk, size_t{1} << 20, 0},
                        {tpcommAlgoOneShotPull, 1024, 0},
                        {tpcommAlgoOneShotPull, 1024, 0, "pull_ll_bytes=0"},
                        {tpcommAlgoOneShotPull, 4097, 0},  // LL, a partial last vector
                        {tpcommAlgoOneShotPull, size_t{1} << 20, 256u << 10},
                        {tpcommAlgoTwoShotPull, size_t{4} << 20, 0},

                        // The copy-engine one-shot, one step and eight (128 KiB regions): after
                        // the first step's timeout the later steps' guards do not wait for the
                        // peer that never came.
                        {tpcommAlgoOneShotCe, 1024, 0},
                        {tpcommAlgoOneShotCe, size_t{1} << 20, 256u << 10}};
  for (const Case& k : cases) {
    tpcommConfig_t cfg = configFor(k.algo, 0, /*timeout_ms=*/300);
    cfg.bufferBytes = k.buffer_bytes;
    cfg.launchKnobs = k.knobs;
    std::string err;
    auto g = makeGroup(2, &cfg, k.count * 2, &err);
    ASSERT_TRUE(g) << err;
    const size_t count = k.count;
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(tpcommAllReduce(g->send[0], g->recv[0], count, tpcommBfloat16, tpcommSum, g->comms[0],
                              g->streams[0]),
              tpcommSuccess);
    cudaSetDevice(g->devs[0]);
    ASSERT_EQ(cudaStreamSynchronize(g->streams[0]), cudaSuccess) << "the context must survive";
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(ms, 300 + 2000) << "the kernel did not give up near its deadline";
    EXPECT_GE(ms, 250) << "gave up before the deadline";
    tpcommResult_t async = tpcommSuccess;
    ASSERT_EQ(tpcommCommGetAsyncError(g->comms[0], &async), tpcommSuccess);
    EXPECT_EQ(async, tpcommTimeout);
    // Every later call fails fast with the reason.
    EXPECT_EQ(tpcommAllReduce(g->send[0], g->recv[0], 16, tpcommBfloat16, tpcommSum, g->comms[0],
                              g->streams[0]),
              tpcommTimeout);
    EXPECT_NE(std::string(tpcommGetLastError()).find("rank 1"), std::string::npos)
        << tpcommGetLastError();
  }
}

// island_pull's waits are on chosen peers (its island members for the inputs and the results,
// its partner for the partial): ranks that never arrive are a timeout naming one of them. Ranks
// share the one GPU, so the islands are the halves of the ranks. Rank 0 alone waits for its
// island members (phase 0); island 0 whole, without island 1, for the partners (phase 1). One
// step and many (small slots).
TEST(Failure, IslandPullPeersThatNeverArriveTimeOut) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (int world : {4, 8})
    for (size_t buffer_bytes : {size_t{0}, size_t{256} << 10}) {
      const int m = world / 2;
      for (int callers : {1, m}) {
        tpcommConfig_t cfg = configFor(tpcommAlgoIslandPull, 4, /*timeout_ms=*/300);
        cfg.bufferBytes = buffer_bytes;
        const size_t count = size_t{1} << 20;  // bf16, 2 MiB: dozens of steps in 64 KiB slots
        std::string err;
        auto g = makeGroup(world, &cfg, count * 2, &err);
        ASSERT_TRUE(g) << err;
        for (int r = 1; r < world; ++r)
          if (g->devs[r] != g->devs[0])
            GTEST_SKIP() << "ranks on several GPUs: islands follow them";
        const auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < callers; ++r)
          ASSERT_EQ(tpcommAllReduce(g->send[r], g->recv[r], count, tpcommBfloat16, tpcommSum,
                                    g->comms[r], g->streams[r]),
                    tpcommSuccess)
              << tpcommGetLastError();
        for (int r = 0; r < callers; ++r) {
          cudaSetDevice(g->devs[r]);
          ASSERT_EQ(cudaStreamSynchronize(g->streams[r]), cudaSuccess) << "the context survives";
        }
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        printf("[ timeout  ] island_pull world %d, %d of %d ranks called, slots %zu: %.0f ms\n",
               world, callers, world, buffer_bytes, ms);
        EXPECT_LT(ms, 300 + 2000) << "the kernels did not give up near their deadline";
        EXPECT_GE(ms, 250) << "gave up before the deadline";
        for (int r = 0; r < callers; ++r) {
          tpcommResult_t async = tpcommSuccess;
          ASSERT_EQ(tpcommCommGetAsyncError(g->comms[r], &async), tpcommSuccess);
          EXPECT_EQ(async, tpcommTimeout) << "rank " << r;
          EXPECT_EQ(tpcommAllReduce(g->send[r], g->recv[r], 16, tpcommBfloat16, tpcommSum,
                                    g->comms[r], g->streams[r]),
                    tpcommTimeout);
          const std::string why = tpcommGetLastError();
          // A rank that never came: with rank 0 alone, an island member (its flags or its
          // call fingerprint); with island 0 whole, a rank of island 1 (the partner's flag, or
          // the fingerprint check, which walks the ranks in order), never one that called.
          bool named = false;
          for (int p = callers; p < (callers == 1 ? m : world); ++p)
            named = named || why.find("for rank " + std::to_string(p)) != std::string::npos;
          EXPECT_TRUE(named) << "world " << world << ", " << callers << " callers, rank " << r
                             << ": " << why;
        }
      }
    }
}

// The kernels' own abort path: calls replayed from a CUDA graph reach the GPU whatever the host
// knows, so once one of them timed out, the next ones must see the communicator's abort word and
// exit at once, not wait out their deadlines one after another. Ten calls of the lean one-shot
// (one block, and eight: the block-wide vote on the abort word) whose peer never comes: about one
// deadline in all, not ten.
TEST(Failure, GraphReplayedAfterATimeoutExitsAtOnce) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (size_t count : {size_t{1024}, size_t{8192}}) {  // bf16: 2 KiB and 16 KiB
    const tpcommConfig_t cfg = configFor(tpcommAlgoAuto, 0, /*timeout_ms=*/300);
    std::string err;
    auto g = makeGroup(2, &cfg, count * 2, &err);
    ASSERT_TRUE(g) << err;
    cudaSetDevice(g->devs[0]);
    cudaStream_t s = g->streams[0];
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    for (int i = 0; i < 10; ++i)
      ASSERT_EQ(
          tpcommAllReduce(g->send[0], g->recv[0], count, tpcommBfloat16, tpcommSum, g->comms[0], s),
          tpcommSuccess)
          << tpcommGetLastError();
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess) << "the context must survive";
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(ms, 250) << "gave up before the deadline";
    EXPECT_LT(ms, 300 + 1500) << "later calls waited out their own deadlines (" << count << ")";
    tpcommResult_t async = tpcommSuccess;
    ASSERT_EQ(tpcommCommGetAsyncError(g->comms[0], &async), tpcommSuccess);
    EXPECT_EQ(async, tpcommTimeout);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
}

TEST(Failure, BadArgumentsGetClearErrors) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const tpcommConfig_t cfg = configFor(tpcommAlgoAuto);
  std::string err;
  auto g = makeGroup(2, &cfg, 1 << 16, &err);
  ASSERT_TRUE(g) << err;
  tpcommComm_t c = g->comms[0];
  cudaStream_t s = g->streams[0];
  void* b = g->send[0];
  auto expect = [&](tpcommResult_t got, tpcommResult_t want, const char* word) {
    EXPECT_EQ(got, want) << tpcommGetLastError();
    EXPECT_NE(std::string(tpcommGetLastError()).find(word), std::string::npos)
        << "message lacks '" << word << "': " << tpcommGetLastError();
  };
  expect(tpcommAllReduce(nullptr, b, 8, tpcommFloat32, tpcommSum, c, s), tpcommInvalidArgument,
         "sendbuff");
  expect(tpcommAllReduce(b, nullptr, 8, tpcommFloat32, tpcommSum, c, s), tpcommInvalidArgument,
         "recvbuff");
  expect(tpcommAllReduce(b, b, 0, tpcommFloat32, tpcommSum, c, s), tpcommInvalidArgument, "count");
  expect(tpcommAllReduce(b, b, 8, static_cast<tpcommDataType_t>(3), tpcommSum, c, s),
         tpcommInvalidArgument, "datatype");
  expect(tpcommAllReduce(b, b, 8, tpcommFloat32, static_cast<tpcommRedOp_t>(1), c, s),
         tpcommInvalidArgument, "op");
  expect(tpcommAllReduce(static_cast<char*>(b) + 1, b, 8, tpcommFloat16, tpcommSum, c, s),
         tpcommInvalidArgument, "aligned");
  if (g->distinctGpus()) {
    expect(tpcommAllReduce(b, b, 8, tpcommFloat32, tpcommSum, c, g->streams[1]),
           tpcommInvalidArgument, "stream");
  }
  // A forced algorithm that cannot run here is refused with the reason, never replaced.
  tpcommConfig_t no_nccl = configFor(tpcommAlgoNccl);
  no_nccl.ncclMode = tpcommNcclOff;
  auto g1 = makeGroup(2, &no_nccl, 0, &err);
  ASSERT_TRUE(g1) << err;
  expect(tpcommAllReduce(b, b, 8, tpcommFloat32, tpcommSum, g1->comms[0], s), tpcommUnsupported,
         "nccl cannot run");
  // A destroyed communicator is refused, not dereferenced.
  tpcommComm_t dead = g1->comms[0];
  ASSERT_EQ(tpcommCommDestroy(dead), tpcommSuccess);
  g1->comms[0] = nullptr;
  expect(tpcommAllReduce(b, b, 8, tpcommFloat32, tpcommSum, dead, s), tpcommInvalidUsage,
         "not a live communicator");
  expect(tpcommCommDestroy(dead), tpcommInvalidUsage, "not a live communicator");
}

TEST(Failure, BadConfigAndInit) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  tpcommComm_t comms[2];
  tpcommConfig_t cfg = TPCOMM_CONFIG_INITIALIZER;
  cfg.magic = 0;
  EXPECT_EQ(tpcommCommInitAll(comms, 2, nullptr, &cfg), tpcommInvalidArgument);
  cfg = TPCOMM_CONFIG_INITIALIZER;
  cfg.algo = 42;
  EXPECT_EQ(tpcommCommInitAll(comms, 2, nullptr, &cfg), tpcommInvalidArgument);
  EXPECT_EQ(tpcommCommInitAll(comms, 9, nullptr, nullptr), tpcommInvalidArgument);
  const int bad_dev[2] = {0, 99};
  EXPECT_EQ(tpcommCommInitAll(comms, 2, bad_dev, nullptr), tpcommInvalidArgument);
}

// tpcomm's entries in /dev/shm (host transport segments).
std::set<std::string> tpcommShmEntries() {
  std::set<std::string> out;
  if (DIR* d = opendir("/dev/shm")) {
    while (const dirent* e = readdir(d))
      if (strncmp(e->d_name, "tpcomm-", 7) == 0) out.insert(e->d_name);
    closedir(d);
  }
  return out;
}

// Rank 0's Begin only names the host segment: it is created in End, and only when the ranks
// agree on the host transport (a full /dev/shm must not fail every multi-rank communicator).
TEST(Failure, RankBeginCreatesNoSharedMemory) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const std::set<std::string> before = tpcommShmEntries();
  tpcommComm_t c = nullptr;
  tpcommRankHandle h;
  ASSERT_EQ(tpcommCommInitRankBegin(&c, 2, 0, nullptr, &h), tpcommSuccess) << tpcommGetLastError();
  EXPECT_EQ(tpcommShmEntries(), before);
  EXPECT_EQ(tpcommCommDestroy(c), tpcommSuccess);
  EXPECT_EQ(tpcommShmEntries(), before);
}

TEST(Stats, LastCallAndCounters) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  std::string err;
  auto g = makeGroup(2, nullptr, 8 << 20, &err);
  ASSERT_TRUE(g) << err;
  // Auto at world 2 runs the one-shot at every size (plan/policy.cc): a single-step call and a
  // 6 MiB one of six steps.
  ASSERT_EQ(runCase(*g, Case{tpcommBfloat16, 1000, false, 0, 5}).result, tpcommSuccess);
  ASSERT_EQ(runCase(*g, Case{tpcommBfloat16, 3u << 20, false, 0, 5}).result, tpcommSuccess);
  tpcommStats_t st;
  ASSERT_EQ(tpcommCommGetStats(g->comms[1], &st), tpcommSuccess);
  EXPECT_EQ(st.calls[tpcommAlgoOneShot], 2u);
  EXPECT_EQ(st.calls[tpcommAlgoTwoShot], 0u);
  EXPECT_EQ(st.fallbacks, 0u);
  tpcommCallInfo_t info;
  ASSERT_EQ(tpcommCommGetLastCall(g->comms[1], &info), tpcommSuccess);
  EXPECT_EQ(info.algo, tpcommAlgoOneShot);
  EXPECT_EQ(info.bytes, (3u << 20) * 2);
  EXPECT_NE(std::string(info.reason).find("oneshot"), std::string::npos) << info.reason;
  ASSERT_EQ(tpcommCommExplain(g->comms[0], 100, tpcommFloat32, &info), tpcommSuccess);
  EXPECT_EQ(info.algo, tpcommAlgoOneShot) << info.reason;
  // A forced algorithm is counted under its own name.
  const tpcommConfig_t cfg = configFor(tpcommAlgoTwoShot);
  auto forced = makeGroup(2, &cfg, 1 << 20, &err);
  ASSERT_TRUE(forced) << err;
  ASSERT_EQ(runCase(*forced, Case{tpcommBfloat16, 1000, false, 0, 5}).result, tpcommSuccess);
  ASSERT_EQ(tpcommCommGetStats(forced->comms[0], &st), tpcommSuccess);
  EXPECT_EQ(st.calls[tpcommAlgoTwoShot], 1u);
  EXPECT_EQ(st.calls[tpcommAlgoOneShot], 0u);
  ASSERT_EQ(tpcommCommGetLastCall(forced->comms[0], &info), tpcommSuccess);
  EXPECT_EQ(info.algo, tpcommAlgoTwoShot);
  EXPECT_NE(std::string(info.reason).find("twoshot"), std::string::npos) << info.reason;
}

// Run by tests/gpu/run_suite.sh against a build configured without sm_90
// (TPCOMM_CUDA_ARCHS=80-real) with TPCOMM_EXPECT_NO_IMAGE=1: init must fail clearly rather than at
// the first launch.
TEST(Arch, MissingKernelImageIsAClearInitError) {
  if (!getenv("TPCOMM_EXPECT_NO_IMAGE")) GTEST_SKIP() << "needs a build without this GPU's arch";
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  tpcommComm_t comms[2] = {nullptr, nullptr};
  const int devs[2] = {0, visibleGpus() > 1 ? 1 : 0};
  EXPECT_EQ(tpcommCommInitAll(comms, 2, devs, nullptr), tpcommNoKernelImage);
  const std::string msg = tpcommGetLastError();
  EXPECT_NE(msg.find("compute capability"), std::string::npos) << msg;
  EXPECT_NE(msg.find("TPCOMM_CUDA_ARCHS"), std::string::npos) << msg;
  printf("init error as the user sees it: %s\n", msg.c_str());
}

}  // namespace
}  // namespace tpcomm::test
