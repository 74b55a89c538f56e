// A wait times out when it has seen no progress for the timeout, not when the call has run that
// long: a call several times the timeout long that keeps moving succeeds bit for bit; a peer that
// never arrives is a timeout within the timeout and a small margin; a peer that starts later than
// the timeout after its partner is a timeout on the early rank (documented behaviour).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/gpu/harness.h"

namespace tpcomm::test {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Timed {
  tpcommResult_t result = tpcommSuccess;  // the first failure: a launch, or an async error
  std::string error;
  double ms = 0;          // from the first launch until every rank's stream drained
  bool bit_exact = true;  // every rank's output matches the reference (countWrong) and rank 0's
};

// One all-reduce of `count` bf16 elements on every rank of g, timed, checked byte for byte.
Timed runTimed(Group& g, size_t count) {
  Timed t;
  const size_t bytes = count * 2;
  std::vector<std::vector<uint8_t>> inputs;
  for (int r = 0; r < g.world; ++r) {
    inputs.push_back(makeInput(tpcommBfloat16, count, 7, r));
    cudaSetDevice(g.devs[r]);
    cudaMemcpy(g.send[r], inputs.back().data(), bytes, cudaMemcpyHostToDevice);
    cudaMemset(g.recv[r], 0xCD, bytes);
  }
  cudaDeviceSynchronize();
  const Clock::time_point t0 = Clock::now();
  tpcommGroupStart();
  for (int r = 0; r < g.world && t.result == tpcommSuccess; ++r) {
    t.result = tpcommAllReduce(g.send[r], g.recv[r], count, tpcommBfloat16, tpcommSum, g.comms[r],
                               g.streams[r]);
    if (t.result != tpcommSuccess) t.error = tpcommGetLastError();
  }
  tpcommGroupEnd();
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    cudaStreamSynchronize(g.streams[r]);
  }
  t.ms = msSince(t0);
  for (int r = 0; r < g.world; ++r) {
    tpcommResult_t async = tpcommSuccess;
    tpcommCommGetAsyncError(g.comms[r], &async);
    if (async != tpcommSuccess && t.result == tpcommSuccess) {
      t.result = async;
      t.error = "async error on rank " + std::to_string(r);
    }
  }
  if (t.result != tpcommSuccess) return t;
  const std::vector<uint8_t> ref = reference(tpcommBfloat16, count, inputs);
  // The reference is fp64 (its rounding is not the kernels' fp32 rank order): within tolerance,
  // and bit-identical across ranks.
  std::vector<uint8_t> got(bytes), first(bytes);
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    cudaMemcpy(got.data(), g.recv[r], bytes, cudaMemcpyDeviceToHost);
    if (countWrong(tpcommBfloat16, count, got.data(), ref.data(), inputs) != 0) t.bit_exact = false;
    if (r == 0) first = got;
    if (memcmp(got.data(), first.data(), bytes) != 0) t.bit_exact = false;
  }
  return t;
}

tpcommConfig_t configWith(int algo, int max_blocks, int timeout_ms, const char* knobs) {
  tpcommConfig_t cfg = configFor(algo, max_blocks, timeout_ms);
  cfg.launchKnobs = knobs;
  return cfg;
}

struct SlowCall {
  const char* name;
  int algo;
  const char* knobs;
  size_t count;  // bf16 elements
};

// (a) One block over host memory: the call takes several times the timeout, and every wait in it
// sees progress well within it. With the whole call under one deadline (the old kernels) it
// failed with tpcommTimeout.
TEST(Deadline, LongCallThatProgressesSucceeds) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const SlowCall calls[] = {
      {"host bulk, 64 MiB", tpcommAlgoHostBulk, nullptr, size_t{32} << 20},
      {"host one-shot LL, 64 MiB", tpcommAlgoHostOneShot, kHostLLKnobs, size_t{32} << 20}};
  for (const SlowCall& k : calls) {
    // How long the call takes here, under a timeout it cannot reach (the second run: warm).
    double base_ms = 0;
    {
      const tpcommConfig_t cfg = configWith(k.algo, 1, 20000, k.knobs);
      std::string err;
      auto g = makeGroup(2, &cfg, k.count * 2, &err);
      ASSERT_TRUE(g) << err;
      for (int i = 0; i < 2; ++i) {
        const Timed t = runTimed(*g, k.count);
        ASSERT_EQ(t.result, tpcommSuccess) << k.name << ": " << t.error;
        base_ms = t.ms;
      }
    }
    // A timeout a fifth of that: the call now lasts about five timeouts.
    const int timeout_ms = static_cast<int>(base_ms / 5);
    ASSERT_GE(timeout_ms, 2) << k.name << " took only " << base_ms
                             << " ms: too fast here to outlast a timeout several times over";
    const tpcommConfig_t cfg = configWith(k.algo, 1, timeout_ms, k.knobs);
    std::string err;
    auto g = makeGroup(2, &cfg, k.count * 2, &err);
    ASSERT_TRUE(g) << err;
    for (int i = 0; i < 3; ++i) {
      const Timed t = runTimed(*g, k.count);
      printf("[ deadline ] %s, 1 block: %.1f ms with a %d ms timeout (%.1fx); %.1f ms unbounded\n",
             k.name, t.ms, timeout_ms, t.ms / timeout_ms, base_ms);
      ASSERT_EQ(t.result, tpcommSuccess)
          << k.name << " (" << t.ms << " ms, timeout " << timeout_ms << " ms): " << t.error;
      EXPECT_TRUE(t.bit_exact) << k.name;
      EXPECT_GE(t.ms, 3.0 * timeout_ms) << k.name << ": the call did not outlast the timeout";
    }
  }
}

struct LoneCall {
  const char* name;
  int algo;
  const char* knobs;
  size_t count;
};

const LoneCall kLoneCalls[] = {
    {"auto, 2 KiB", tpcommAlgoAuto, nullptr, 1024},
    {"two-shot, 8 MiB", tpcommAlgoTwoShot, nullptr, size_t{4} << 20},
    {"host bulk, 2 MiB", tpcommAlgoHostBulk, nullptr, size_t{1} << 20},
    {"host one-shot LL, 64 KiB", tpcommAlgoHostOneShot, kHostLLKnobs, size_t{32} << 10},
    {"copy-engine one-shot, 2 KiB", tpcommAlgoOneShotCe, nullptr, 1024}};

// (b) A peer that never arrives: rank 0's call gives up after the timeout and a small margin (its
// waits' first checks and the launch), not later. A good call first, so that module loading and
// first-launch costs are not in the measured time.
TEST(Deadline, PeerThatNeverArrivesTimesOutOnTime) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  constexpr int kTimeoutMs = 100;
  constexpr double kMarginMs = 60;
  for (const LoneCall& k : kLoneCalls) {
    const tpcommConfig_t cfg = configWith(k.algo, 0, kTimeoutMs, k.knobs);
    std::string err;
    auto g = makeGroup(2, &cfg, k.count * 2, &err);
    ASSERT_TRUE(g) << err;
    const Timed good = runTimed(*g, k.count);
    ASSERT_EQ(good.result, tpcommSuccess) << k.name << ": " << good.error;
    cudaSetDevice(g->devs[0]);
    const Clock::time_point t0 = Clock::now();
    ASSERT_EQ(tpcommAllReduce(g->send[0], g->recv[0], k.count, tpcommBfloat16, tpcommSum,
                              g->comms[0], g->streams[0]),
              tpcommSuccess);
    ASSERT_EQ(cudaStreamSynchronize(g->streams[0]), cudaSuccess) << "the context must survive";
    const double ms = msSince(t0);
    printf("[ deadline ] %s, peer never arrives: gave up after %.1f ms (timeout %d ms)\n", k.name,
           ms, kTimeoutMs);
    EXPECT_GE(ms, kTimeoutMs) << k.name << ": gave up before the timeout";
    EXPECT_LT(ms, kTimeoutMs + kMarginMs) << k.name << ": gave up late";
    tpcommResult_t async = tpcommSuccess;
    ASSERT_EQ(tpcommCommGetAsyncError(g->comms[0], &async), tpcommSuccess);
    EXPECT_EQ(async, tpcommTimeout) << k.name;
  }
}

// (c) A peer that starts three timeouts late: the early rank's first wait sees no progress for
// the timeout and gives up before the late rank has even launched. The deadline measures
// silence, not lateness.
TEST(Deadline, PeerThreeTimeoutsLateTimesOutTheEarlyRank) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  constexpr int kTimeoutMs = 100;
  const LoneCall& k = kLoneCalls[0];
  const tpcommConfig_t cfg = configWith(k.algo, 0, kTimeoutMs, k.knobs);
  std::string err;
  auto g = makeGroup(2, &cfg, k.count * 2, &err);
  ASSERT_TRUE(g) << err;
  const Timed good = runTimed(*g, k.count);
  ASSERT_EQ(good.result, tpcommSuccess) << good.error;
  cudaSetDevice(g->devs[0]);
  ASSERT_EQ(tpcommAllReduce(g->send[0], g->recv[0], k.count, tpcommBfloat16, tpcommSum, g->comms[0],
                            g->streams[0]),
            tpcommSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * kTimeoutMs));
  EXPECT_EQ(cudaStreamQuery(g->streams[0]), cudaSuccess)
      << "the early rank was still waiting three timeouts after its launch";
  tpcommResult_t async = tpcommSuccess;
  ASSERT_EQ(tpcommCommGetAsyncError(g->comms[0], &async), tpcommSuccess);
  EXPECT_EQ(async, tpcommTimeout);
  // The late rank: its partner pushed before giving up, so it may complete or time out itself;
  // either way its context survives. Printed, not asserted.
  cudaSetDevice(g->devs[1]);
  ASSERT_EQ(tpcommAllReduce(g->send[1], g->recv[1], k.count, tpcommBfloat16, tpcommSum, g->comms[1],
                            g->streams[1]),
            tpcommSuccess);
  ASSERT_EQ(cudaStreamSynchronize(g->streams[1]), cudaSuccess) << "the context must survive";
  tpcommResult_t late = tpcommSuccess;
  tpcommCommGetAsyncError(g->comms[1], &late);
  printf("[ deadline ] peer 3 timeouts late: early rank %s, late rank %s\n",
         tpcommGetErrorString(async), tpcommGetErrorString(late));
}

}  // namespace
}  // namespace tpcomm::test
