// The host sentinel protocol's failure mode and its fence (docs/PROTOCOL.md, "The host
// sentinel's clears"). A reader's clear that lands after the peer's next data must make the entry
// read as "not arrived": a timeout naming the peer, never a wrong value. The tests play that late
// clear from the host, on a real world-2 call over the host transport: the peer's call runs
// first, its push lands in the reader's inbox, the host zeroes one word or all of one entry (what
// a late clear writes: entries are stored inverted), and only then does the reader's call run.
#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm.h"
#include "kernels/runtime/algo_launch.h"  // slotCapacity
#include "plan/knobs.h"
#include "tests/gpu/harness.h"
#include "topo/pcie_ordering.h"
#include "transport/host_shm.h"

namespace tpcomm::test {
namespace {

constexpr unsigned char kUnwritten = 0xCD;  // the outputs before a call
constexpr unsigned char kNaN =
    0xFF;  // what a failed call leaves (kernels/device/poison_device.cuh)

// Small integers: every sum is exact in fp32 and bf16, so a result is right or wrong bit for bit.
float valueOf(int rank, size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(i % 13 + 1));
}

std::vector<uint8_t> encode(tpcommDataType_t dt, size_t count, int rank_or_sum) {
  std::vector<uint8_t> out(count * elemSize(dt));
  for (size_t i = 0; i < count; ++i) {
    // rank_or_sum < 0: the world-2 sum, rank 0's value plus rank 1's.
    const float v = rank_or_sum >= 0 ? valueOf(rank_or_sum, i) : valueOf(0, i) + valueOf(1, i);
    if (dt == tpcommFloat32) {
      memcpy(out.data() + 4 * i, &v, 4);
    } else {
      const __nv_bfloat16 b = __float2bfloat16(v);
      memcpy(out.data() + 2 * i, &b, 2);
    }
  }
  return out;
}

// The slot the communicator's next call uses (its epoch, in device memory).
size_t nextSlot(tpcommComm_t c) {
  unsigned long long epoch = ~0ull;
  cudaSetDevice(c->device);
  cudaMemcpy(&epoch, &c->dev.state->epoch, sizeof(epoch), cudaMemcpyDeviceToHost);
  return epoch % kNumSlots;
}

// Word `w` of the entry rank `src`'s vector `v` fills in `dst`'s host sentinel inbox slot `slot`,
// as this process sees it.
volatile uint32_t* inboxWord(tpcommComm_t dst, size_t slot, int src, size_t v, int w) {
  const HostSegment& seg = dst->host_seg;
  char* dev = hostSentinelInbox(seg, dst->world, dst->rank, dst->settings.host_slot_bytes);
  const size_t region =
      slotCapacity(dst->dev).host_sentinel_step_bytes / kVecBytes;  // vectors per source
  char* host = seg.host + (dev - seg.dev) + slot * kHostSentinelSlotBytes;
  return reinterpret_cast<volatile uint32_t*>(host + (src * region + v) * kVecBytes) + w;
}

// Waits until every word of that entry holds pushed data (never 0: pushes are canonicalised, and
// stored inverted).
bool landed(tpcommComm_t dst, size_t slot, int src, size_t v) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < end) {
    bool all = true;
    for (int w = 0; w < 4; ++w) all = all && *inboxWord(dst, slot, src, v, w) != 0u;
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return false;
}

struct LateClear {
  tpcommDataType_t dtype;
  size_t count;
  unsigned words;  // bit w: word w of the entry cleared; 0: nothing (the control case)
  size_t vec;      // the entry: rank 1's vector `vec` in rank 0's inbox
  int variant;     // the kernel rank 0 must run
};

TEST(HostSentinel, LateClearIsATimeoutNotData) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const LateClear cases[] = {
      {tpcommFloat32, 1024, 0x0, 3, tpcommVariantHostOneShotSentinelLean},     // control
      {tpcommFloat32, 1024, 0xF, 3, tpcommVariantHostOneShotSentinelLean},     // a whole entry
      {tpcommFloat32, 1024, 0x4, 3, tpcommVariantHostOneShotSentinelLean},     // one fp32 word
      {tpcommBfloat16, 2048, 0x1, 100, tpcommVariantHostOneShotSentinelLean},  // two bf16 halves
      {tpcommFloat32, 1025, 0x8, 5, tpcommVariantHostOneShotSentinel},  // general kernel (tail)
  };
  for (const LateClear& k : cases) {
    const std::string name = std::string(dtypeName(k.dtype)) + " count=" + std::to_string(k.count) +
                             " words=" + std::to_string(k.words);
    // Long enough for rank 0's launch after rank 1's push under the sanitizers (run_suite.sh).
    tpcommConfig_t cfg = configFor(tpcommAlgoHostOneShot, 0, /*timeout_ms=*/2000);
    std::string err;
    auto g = makeGroup(2, &cfg, k.count * 4, &err);
    ASSERT_TRUE(g) << err;
    const size_t bytes = k.count * elemSize(k.dtype);
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(g->devs[r]);
      const std::vector<uint8_t> in = encode(k.dtype, k.count, r);
      ASSERT_EQ(cudaMemcpy(g->send[r], in.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemset(g->recv[r], kUnwritten, bytes), cudaSuccess);
      cudaDeviceSynchronize();
    }
    auto call = [&](int r) {
      return tpcommAllReduce(g->send[r], g->recv[r], k.count, k.dtype, tpcommSum, g->comms[r],
                             g->streams[r]);
    };
    const size_t slot = nextSlot(g->comms[0]);
    ASSERT_EQ(call(1), tpcommSuccess) << name;  // pushes, then waits for rank 0
    ASSERT_TRUE(landed(g->comms[0], slot, 1, k.vec)) << name << ": rank 1's push never arrived";
    for (int w = 0; w < 4; ++w)
      if (k.words & (1u << w)) *inboxWord(g->comms[0], slot, 1, k.vec, w) = 0u;  // late clear
    ASSERT_EQ(call(0), tpcommSuccess) << name;
    tpcommCallInfo_t info{};
    ASSERT_EQ(tpcommCommGetLastCall(g->comms[0], &info), tpcommSuccess);
    EXPECT_EQ(info.variant, k.variant) << name << ": ran " << tpcommVariantName(info.variant);
    tpcommResult_t async[2] = {tpcommSuccess, tpcommSuccess};
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(g->devs[r]);
      ASSERT_EQ(cudaStreamSynchronize(g->streams[r]), cudaSuccess) << name;
      tpcommCommGetAsyncError(g->comms[r], &async[r]);
    }
    // Rank 1 got everything it waited for; rank 0 waited for the cleared entry until the deadline.
    EXPECT_EQ(async[1], tpcommSuccess) << name;
    EXPECT_EQ(async[0], k.words ? tpcommTimeout : tpcommSuccess) << name;
    // Every output vector is the exact sum or NaN (the poison a thread that gave up writes, all
    // ones), none is left as it was; the cleared entry's is NaN.
    const std::vector<uint8_t> want = encode(k.dtype, k.count, -1);
    std::vector<uint8_t> got(bytes);
    size_t nan[2] = {0, 0}, untouched = 0, wrong = 0;
    bool cleared_nan = true;
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(g->devs[r]);
      ASSERT_EQ(cudaMemcpy(got.data(), g->recv[r], bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      for (size_t v = 0; v * kVecBytes < bytes; ++v) {
        const size_t lo = v * kVecBytes, n = std::min<size_t>(kVecBytes, bytes - lo);
        bool all_nan = true, kept = true;
        for (size_t b = lo; b < lo + n; ++b) {
          all_nan = all_nan && got[b] == kNaN;
          kept = kept && got[b] == kUnwritten;
        }
        if (all_nan) {
          ++nan[r];
        } else if (kept) {
          ++untouched;
        } else if (memcmp(got.data() + lo, want.data() + lo, n) != 0) {
          ++wrong;
        }
        if (r == 0 && v == k.vec && !all_nan) cleared_nan = false;
      }
    }
    EXPECT_EQ(wrong, 0u) << name << ": a late clear must never produce data";
    EXPECT_EQ(untouched, 0u) << name << ": an output vector kept what it held before the call";
    EXPECT_EQ(nan[1], 0u) << name << ": rank 1 received everything";
    if (k.words) {
      EXPECT_TRUE(cleared_nan) << name << ": rank 0's output of a cleared entry is not NaN";
    } else {
      EXPECT_EQ(nan[0], 0u) << name << ": the control call must complete";
    }
    printf("[ late clear ] %s: rank 0 %s, %zu of its output vectors NaN, %zu wrong\n", name.c_str(),
           tpcommGetErrorString(async[0]), nan[0], wrong);
    // After the check: a refused call fills rank 0's whole output with NaN
    // (comm/call/poison_outputs.h).
    if (k.words) {
      EXPECT_EQ(call(0), tpcommTimeout) << name << ": the communicator must stay aborted";
      EXPECT_NE(std::string(tpcommGetLastError()).find("rank 1"), std::string::npos)
          << tpcommGetLastError();
    }
  }
}

// Microseconds per call of `iters` back-to-back calls of `count` bf16 on every rank, captured in
// one CUDA graph per rank and replayed (the way engines call it); -1 if capture or replay failed.
double usPerCall(Group& g, size_t count, int iters) {
  std::vector<cudaGraphExec_t> exec(g.world, nullptr);
  bool ok = true;
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    ok = ok && cudaStreamBeginCapture(g.streams[r], cudaStreamCaptureModeGlobal) == cudaSuccess;
  }
  for (int i = 0; i < iters && ok; ++i)
    for (int r = 0; r < g.world; ++r)
      ok = ok && tpcommAllReduce(g.send[r], g.recv[r], count, tpcommBfloat16, tpcommSum, g.comms[r],
                                 g.streams[r]) == tpcommSuccess;
  // Every capture ends before any instantiation: cudaGraphInstantiate is not allowed while
  // another stream captures in global mode, and it invalidates that capture.
  std::vector<cudaGraph_t> graphs(g.world, nullptr);
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    ok = cudaStreamEndCapture(g.streams[r], &graphs[r]) == cudaSuccess && ok;
  }
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    if (graphs[r]) {
      ok = ok && cudaGraphInstantiate(&exec[r], graphs[r], 0) == cudaSuccess;
      cudaGraphDestroy(graphs[r]);
    }
  }
  cudaEvent_t t0 = nullptr, t1 = nullptr;
  cudaSetDevice(g.devs[0]);
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  for (int rep = 0; rep < 2 && ok; ++rep) {  // the first replay warms up, the second is timed
    cudaSetDevice(g.devs[0]);
    cudaEventRecord(t0, g.streams[0]);
    for (int r = 0; r < g.world; ++r) {
      cudaSetDevice(g.devs[r]);
      ok = ok && cudaGraphLaunch(exec[r], g.streams[r]) == cudaSuccess;
    }
    cudaSetDevice(g.devs[0]);
    cudaEventRecord(t1, g.streams[0]);
    for (int r = 0; r < g.world; ++r) {
      cudaSetDevice(g.devs[r]);
      ok = ok && cudaStreamSynchronize(g.streams[r]) == cudaSuccess;
    }
  }
  float ms = 0.f;
  ok = ok && cudaEventElapsedTime(&ms, t0, t1) == cudaSuccess;
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  for (int r = 0; r < g.world; ++r)
    if (exec[r]) cudaGraphExecDestroy(exec[r]);
  if (!ok)
    printf("[ host_fence ] capture or replay failed: tpcomm: %s; CUDA: %s\n", tpcommGetLastError(),
           cudaGetErrorString(cudaGetLastError()));
  return ok ? 1000.0 * ms / iters : -1.0;
}

// The launch knob host_fence=1 (a system-scope fence after every reading thread's clears): the
// calls stay correct over both host protocols (sentinel up to a region, LL above), and the cost
// of the fence is printed next to host_fence=0 at 1 KiB, 16 KiB and 256 KiB, in CUDA graphs (the
// suite's bench_host_knobs step has the same comparison at every size), with what the default
// (auto) chooses on this machine's driver.
TEST(HostSentinel, FenceKnobCorrectAndTimed) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const topo::PcieOrdering ordering = topo::readRelaxedOrdering();
  printf("[ host_fence ] auto: %s, because %s\n",
         hostFenceOn(kHostFenceAuto, ordering) ? "on" : "off", ordering.why.c_str());
  tpcommConfig_t plain = configFor(tpcommAlgoHostOneShot, 0, 20000);
  plain.launchKnobs = "host_fence=0";
  tpcommConfig_t fenced = plain;
  fenced.launchKnobs = "host_fence=1";
  std::string err;
  auto g0 = makeGroup(2, &plain, 1 << 20, &err);
  ASSERT_TRUE(g0) << err;
  auto g1 = makeGroup(2, &fenced, 1 << 20, &err);
  ASSERT_TRUE(g1) << err;
  const Case cases[] = {{tpcommBfloat16, 512, false, 0, 71u},    // sentinel, lean
                        {tpcommFloat32, 4097, true, 1, 72u},     // sentinel, general
                        {tpcommFloat32, 200000, false, 0, 73u},  // 800 KB: LL
                        {tpcommFloat16, 65536, false, 0, 74u}};  // sentinel
  for (int round = 0; round < 2; ++round)
    for (const Case& c : cases) {
      const Outcome o = runCase(*g1, c);
      const std::string name = caseName(c, tpcommAlgoHostOneShot, 2) + " host_fence=1";
      ASSERT_EQ(o.result, tpcommSuccess) << name << ": " << o.describe();
      EXPECT_EQ(o.wrong, 0u) << name << ": " << o.describe();
      EXPECT_TRUE(o.ranks_agree) << name;
    }
  for (size_t bytes : {size_t{1} << 10, size_t{16} << 10, size_t{256} << 10}) {
    const size_t count = bytes / 2;
    const double base = usPerCall(*g0, count, 200), fence = usPerCall(*g1, count, 200);
    EXPECT_GT(base, 0.0) << "capture or replay failed";
    EXPECT_GT(fence, 0.0) << "capture or replay failed";
    printf("[ host_fence ] host_oneshot %zu KiB bf16: %.2f us per call, %.2f with the fence\n",
           bytes >> 10, base, fence);
  }
}

}  // namespace
}  // namespace tpcomm::test
