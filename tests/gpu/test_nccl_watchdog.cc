// The bound on NCCL-served calls (comm/lifecycle/nccl_watchdog.h) with a real GPU: a kernel
// spinning on a host-mapped flag stands in for an NCCL kernel whose peer died, and the watch's
// "abort" sets the flag. NCCL refuses two ranks on one GPU, so a real NCCL hang cannot be staged on
// the one lent GPU; what is tested is everything around the NCCL call: the events, the watchdog
// thread, the abort from that thread, and the communicator that then fails every call with
// tpcommTimeout.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "comm/comm.h"
#include "comm/lifecycle/nccl_watchdog.h"
#include "common/error.h"
#include "tests/gpu/harness.h"
#include "tests/gpu/spin_kernel.h"

namespace tpcomm::test {
namespace {

using Clock = std::chrono::steady_clock;

// A host-mapped flag the spin kernel waits on.
struct MappedFlag {
  int* host = nullptr;
  int* dev = nullptr;
  MappedFlag() {
    cudaHostAlloc(reinterpret_cast<void**>(&host), sizeof(int), cudaHostAllocMapped);
    *reinterpret_cast<volatile int*>(host) = 0;
    cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), host, 0);
  }
  ~MappedFlag() { cudaFreeHost(host); }
  void set() { *reinterpret_cast<volatile int*>(host) = 1; }
  void reset() { *reinterpret_cast<volatile int*>(host) = 0; }
};

constexpr unsigned kSpinBoundMs = 10000;  // the stand-in gives up by itself only past this

// One fake NCCL call through the watch: the spin kernel between the watch's events.
tpcommResult_t watchedSpin(NcclWatch& w, cudaStream_t s, const MappedFlag& f, const char* what) {
  cudaEvent_t start = nullptr;
  const tpcommResult_t r = w.begin(
      s,
      [&] {
        launchSpinUntilFlag(f.dev, kSpinBoundMs, s);
        return cudaGetLastError() == cudaSuccess ? tpcommSuccess : tpcommUnhandledCudaError;
      },
      &start);
  if (r != tpcommSuccess) return r;
  return w.finish(s, start, what);
}

// A stream on GPU 0, the flag, and a watch whose "abort" counts itself and releases the kernel.
struct Rig {
  cudaStream_t stream = nullptr;
  MappedFlag flag;
  std::atomic<int> aborts{0};
  NcclWatch watch;
  explicit Rig(int timeout_ms)
      : watch(0, timeout_ms, [this] {
          aborts++;
          flag.set();
        }) {
    cudaSetDevice(0);
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  }
  ~Rig() {
    watch.stop();
    cudaStreamDestroy(stream);
  }
};

TEST(NcclWatchdog, HungCallIsAbortedWithinTheTimeout) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  constexpr int kTimeoutMs = 200;
  Rig rig(kTimeoutMs);
  NcclWatch& w = rig.watch;
  MappedFlag& flag = rig.flag;
  const cudaStream_t s = rig.stream;
  const auto t0 = Clock::now();
  ASSERT_EQ(watchedSpin(w, s, flag, "fake NCCL call"), tpcommSuccess) << tpcommGetLastError();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  printf("[ nccl watchdog ] hung stand-in released after %.1f ms (timeout %d ms)\n", ms,
         kTimeoutMs);
  w.stop();
  EXPECT_EQ(rig.aborts.load(), 1);
  EXPECT_TRUE(w.hung());
  EXPECT_TRUE(w.ended());
  EXPECT_GE(ms, kTimeoutMs);
  EXPECT_LT(ms, kTimeoutMs + 100) << "released late (the look period is 20 ms)";
  EXPECT_NE(w.report().find("fake NCCL call"), std::string::npos) << w.report();
  // A refused launch once hung: nothing more goes to the aborted communicator.
  EXPECT_EQ(watchedSpin(w, s, flag, "after"), tpcommTimeout);
}

// A launch that put a kernel on the stream and then reported an error (NCCL seeing a peer's
// socket close while it enqueued a call across machines): the link breaks it at once
// (breakAfterFailedLaunch), so the stream drains instead of hanging with no watch on it, the
// launch's message stays the caller's, and nothing more is launched. Before, the stream waited
// for ever (MultiNode.AMachineThatDiesIsATimeoutOnTheOther, run 60 s into its time limit).
TEST(NcclWatchdog, AFailedLaunchEndsWhatItLeftOnTheStream) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  Rig rig(60000);  // the watchdog itself would not fire within the test
  NcclWatch& w = rig.watch;
  const cudaStream_t s = rig.stream;
  const auto t0 = Clock::now();
  cudaEvent_t start = nullptr;
  const tpcommResult_t r = w.begin(
      s,
      [&] {
        launchSpinUntilFlag(rig.flag.dev, kSpinBoundMs, s);
        return fail(tpcommNcclError, "fake all_reduce failed: remote process exited");
      },
      &start);
  ASSERT_EQ(r, tpcommNcclError);
  w.breakAfterFailedLaunch();
  EXPECT_NE(std::string(tpcommGetLastError()).find("remote process exited"), std::string::npos)
      << tpcommGetLastError();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  printf("[ nccl watchdog ] failed launch's kernel released after %.1f ms\n", ms);
  EXPECT_LT(ms, 1000.0);
  EXPECT_EQ(rig.aborts.load(), 1);
  EXPECT_TRUE(w.hung());
  EXPECT_TRUE(w.ended());
  EXPECT_NE(w.report().find("remote process exited"), std::string::npos) << w.report();
  EXPECT_NE(w.report().find("aborted"), std::string::npos) << w.report();
  w.breakAfterFailedLaunch();  // once only
  EXPECT_EQ(rig.aborts.load(), 1);
  rig.flag.reset();
  EXPECT_EQ(watchedSpin(w, s, rig.flag, "after"), tpcommTimeout);
}

TEST(NcclWatchdog, CallsThatFinishAreNeverAborted) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  constexpr int kTimeoutMs = 100;
  Rig rig(kTimeoutMs);
  NcclWatch& w = rig.watch;
  MappedFlag& flag = rig.flag;
  const cudaStream_t s = rig.stream;
  // Five calls of half the timeout each: 2.5 timeouts in all, each within it.
  const auto t0 = Clock::now();
  for (int i = 0; i < 5; ++i) {
    flag.reset();
    ASSERT_EQ(watchedSpin(w, s, flag, "short call"), tpcommSuccess) << tpcommGetLastError();
    std::this_thread::sleep_for(std::chrono::milliseconds(kTimeoutMs / 2));
    flag.set();
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  printf("[ nccl watchdog ] 5 calls of %d ms: %.1f ms, no abort\n", kTimeoutMs / 2, ms);
  EXPECT_EQ(rig.aborts.load(), 0);
  EXPECT_FALSE(w.hung());
}

// The communicator's side: once its watch fired, every call fails at once with tpcommTimeout and
// a message naming the hung call, and tpcommCommGetAsyncError says tpcommTimeout. (Ranks sharing
// a GPU get no NCCL communicator, so the watch is installed by hand with a stand-in abort.)
TEST(NcclWatchdog, CommunicatorIsBrokenAfterAHang) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  constexpr int kTimeoutMs = 100;
  const tpcommConfig_t cfg = configFor(tpcommAlgoAuto, 0, kTimeoutMs);
  std::string err;
  auto g = makeGroup(2, &cfg, 1 << 16, &err);
  ASSERT_TRUE(g) << err;
  tpcommComm_t c = g->comms[0];
  cudaSetDevice(g->devs[0]);
  MappedFlag flag;
  c->nccl_watch = std::make_unique<NcclWatch>(c->device, kTimeoutMs, [&] { flag.set(); });
  const auto t0 = Clock::now();
  ASSERT_EQ(watchedSpin(*c->nccl_watch, g->streams[0], flag, "tpcommAllReduce of 4096 bytes"),
            tpcommSuccess);
  ASSERT_EQ(cudaStreamSynchronize(g->streams[0]), cudaSuccess);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  printf("[ nccl watchdog ] communicator broken after %.1f ms (timeout %d ms)\n", ms, kTimeoutMs);
  EXPECT_LT(ms, kTimeoutMs + 100);
  tpcommResult_t async = tpcommSuccess;
  ASSERT_EQ(tpcommCommGetAsyncError(c, &async), tpcommSuccess);
  EXPECT_EQ(async, tpcommTimeout);
  EXPECT_EQ(
      tpcommAllReduce(g->send[0], g->recv[0], 16, tpcommBfloat16, tpcommSum, c, g->streams[0]),
      tpcommTimeout);
  const std::string msg = tpcommGetLastError();
  EXPECT_NE(msg.find("tpcommAllReduce of 4096 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("aborted"), std::string::npos) << msg;
}

}  // namespace
}  // namespace tpcomm::test
