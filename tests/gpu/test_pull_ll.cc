// The one-step pull with the flag in the data (tpcommVariantP2pOneShotPullLL, oneshot_pull_ll.cu):
// oneshot_pull calls of one step up to the pull_ll_bytes knob. Correct at worlds 2..8 (ranks
// sharing the GPU) for every datatype, odd counts and misaligned pointers; LL and flag calls
// alternate on one communicator; the bits equal the push one-shot's and the flag pull's; calls
// that disagree (LL against LL, LL against the flag kernel) are caught by the fingerprints. Every
// test checks that the LL kernel is what ran (tpcommCommGetLastCall). Elsewhere:
// Correctness.MisalignedRankWithAlignedOnesOneShotPullLL (test_correctness.cc),
// Graph.CaptureHundredOneShotPullLLCallsReplayThousandTimes, Failure.PeerThatNeverArrivesTimesOut.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tests/gpu/harness.h"

namespace tpcomm::test {
namespace {

constexpr const char* kLLTo64K = "pull_ll_bytes=65536";  // LL for every call an LL slot holds
constexpr size_t kLLMax = 64 << 10;

// The variant rank r's last call ran.
int lastVariant(Group& g, int r) {
  tpcommCallInfo_t info{};
  tpcommCommGetLastCall(g.comms[r], &info);
  return info.variant;
}

// Worlds 2..8 (above the GPU count ranks share it; the planner caps the grids): every datatype
// at world 2, fp32 and bf16 above; counts from 1 element to a full LL slot (64 KiB) and one vector
// past it (the flag kernel, on the same slots' epochs); offsets 0, 1 and 3 elements.
class CorrectnessPullLLWorld : public ::testing::TestWithParam<int> {};

TEST_P(CorrectnessPullLLWorld, Matrix) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const int world = GetParam();
  tpcommConfig_t cfg = configFor(tpcommAlgoOneShotPull, 0, 5000);
  cfg.launchKnobs = kLLTo64K;
  std::string err;
  auto g = makeGroup(world, &cfg, kLLMax + 64, &err);
  ASSERT_TRUE(g) << err;
  const auto t0 = std::chrono::steady_clock::now();
  int cases = 0, ll = 0;
  for (tpcommDataType_t dt : {tpcommFloat32, tpcommFloat16, tpcommBfloat16}) {
    if (world > 2 && dt == tpcommFloat16) continue;
    const size_t es = elemSize(dt), full = kLLMax / es;
    for (size_t count : {size_t{1}, size_t{7}, size_t{8}, size_t{31}, size_t{1000}, size_t{4097},
                         full - 1, full, full + 16 / es}) {
      for (int in_place = 0; in_place < 2; ++in_place) {
        for (size_t offset : {size_t{0}, size_t{1}, size_t{3}}) {
          if (world > 2 && offset == 3) continue;
          const Case c{dt, count, in_place == 1, offset, 3000 + count + offset};
          const std::string name = caseName(c, tpcommAlgoOneShotPull, world);
          const Outcome o = runCase(*g, c);
          ++cases;
          ASSERT_EQ(o.result, tpcommSuccess) << name << ": " << o.describe();
          EXPECT_EQ(o.wrong, 0u) << name << ": " << o.describe();
          EXPECT_TRUE(o.ranks_agree) << name << ": ranks' outputs differ";
          const bool want_ll = count * es <= kLLMax;
          for (int r = 0; r < world; ++r)
            EXPECT_EQ(lastVariant(*g, r) == tpcommVariantP2pOneShotPullLL, want_ll)
                << name << ": rank " << r << " ran " << tpcommVariantName(lastVariant(*g, r));
          ll += want_ll;
        }
      }
    }
  }
  printf("[ pull ll  ] world=%d: %d cases (%d LL) in %.2f s\n", world, cases, ll,
         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}
INSTANTIATE_TEST_SUITE_P(World, CorrectnessPullLLWorld, ::testing::Values(2, 3, 4, 5, 6, 7, 8));

// LL and flag calls on one communicator, at the default knobs, in an order that has each kind
// follow the other on the same epochs (slots e % 4 of both areas): LL, the flag kernels (lean,
// general, multi-step), LL misaligned and in place.
TEST(CorrectnessPullLL, AlternatesWithTheFlagKernels) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const tpcommConfig_t cfg = configFor(tpcommAlgoOneShotPull, 0, 5000);
  std::string err;
  auto g = makeGroup(3, &cfg, 4 << 20, &err);
  ASSERT_TRUE(g) << err;
  struct Step {
    Case c;
    bool ll;
  };
  const Step steps[] = {{{tpcommBfloat16, 1000, false, 0, 71u}, true},
                        {{tpcommBfloat16, 65536, false, 0, 72u}, false},  // 128 KiB: lean
                        {{tpcommBfloat16, 8191, false, 1, 73u}, true},    // misaligned
                        {{tpcommFloat32, 40001, true, 0, 74u}, false},    // general
                        {{tpcommFloat32, 7, true, 3, 75u}, true},
                        {{tpcommBfloat16, (1u << 20) + 5, false, 0, 76u}, false},  // 3 steps
                        {{tpcommFloat32, 4096, false, 0, 77u}, true}};
  for (int round = 0; round < 3; ++round) {
    for (const Step& s : steps) {
      const std::string name = caseName(s.c, tpcommAlgoOneShotPull, 3);
      const Outcome o = runCase(*g, s.c);
      ASSERT_EQ(o.result, tpcommSuccess) << name << ": " << o.describe();
      EXPECT_EQ(o.wrong, 0u) << name << ": " << o.describe();
      EXPECT_TRUE(o.ranks_agree) << name;
      EXPECT_EQ(lastVariant(*g, 0) == tpcommVariantP2pOneShotPullLL, s.ll)
          << name << ": ran " << tpcommVariantName(lastVariant(*g, 0));
    }
  }
}

// The same inputs through the push one-shot, the flag pull (pull_ll_bytes=0) and LL: the same
// bits (rank-order fp32 sums, canonicalised alike), every datatype, whole and partial vectors.
TEST(CorrectnessPullLL, SameBitsAsPushAndFlagPull) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  struct Run {
    int algo;
    const char* knobs;
    bool ll;
  };
  const Run runs[] = {{tpcommAlgoOneShot, nullptr, false},
                      {tpcommAlgoOneShotPull, "pull_ll_bytes=0", false},
                      {tpcommAlgoOneShotPull, kLLTo64K, true}};
  const int world = 2;
  std::vector<std::unique_ptr<Group>> groups;
  for (const Run& run : runs) {
    tpcommConfig_t cfg = configFor(run.algo, 0, 3000);
    cfg.launchKnobs = run.knobs;
    std::string err;
    groups.push_back(makeGroup(world, &cfg, 32 << 10, &err));
    ASSERT_TRUE(groups.back()) << err;
  }
  for (tpcommDataType_t dt : {tpcommFloat32, tpcommFloat16, tpcommBfloat16}) {
    for (size_t count : {size_t{5}, size_t{1000}, size_t{7777}}) {
      const size_t bytes = count * elemSize(dt);
      std::vector<std::vector<uint8_t>> in;
      for (int r = 0; r < world; ++r) in.push_back(makeInput(dt, count, 900 + count, r));
      std::vector<std::vector<uint8_t>> outs;
      for (size_t k = 0; k < groups.size(); ++k) {
        Group& g = *groups[k];
        for (int r = 0; r < world; ++r) {
          cudaSetDevice(g.devs[r]);
          ASSERT_EQ(cudaMemcpy(g.send[r], in[r].data(), bytes, cudaMemcpyHostToDevice),
                    cudaSuccess);
        }
        tpcommGroupStart();
        for (int r = 0; r < world; ++r)
          ASSERT_EQ(
              tpcommAllReduce(g.send[r], g.recv[r], count, dt, tpcommSum, g.comms[r], g.streams[r]),
              tpcommSuccess);
        tpcommGroupEnd();
        for (int r = 0; r < world; ++r) ASSERT_TRUE(drained(g, r));
        EXPECT_EQ(lastVariant(g, 0) == tpcommVariantP2pOneShotPullLL, runs[k].ll)
            << tpcommVariantName(lastVariant(g, 0));
        outs.emplace_back(bytes);
        cudaSetDevice(g.devs[0]);
        ASSERT_EQ(cudaMemcpy(outs.back().data(), g.recv[0], bytes, cudaMemcpyDeviceToHost),
                  cudaSuccess);
      }
      EXPECT_EQ(outs[2], outs[0]) << dtypeName(dt) << " x " << count << ": LL differs from push";
      EXPECT_EQ(outs[2], outs[1]) << dtypeName(dt) << " x " << count << ": LL differs from flag";
    }
  }
}

// Calls that disagree: counts N against 2N both on LL, and an LL call (8 KiB) against a flag
// kernel's (32 KiB): neither waits out the deadline, both ranks get tpcommInvalidUsage naming
// both calls.
TEST(MismatchPullLL, EveryRankReportsBothCalls) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  struct Pair {
    size_t rank0, rank1;  // bf16 counts
  };
  for (const Pair& p : {Pair{1024, 2048}, Pair{4096, 16384}}) {
    const tpcommConfig_t cfg = configFor(tpcommAlgoOneShotPull, 0, 5000);
    std::string err;
    auto g = makeGroup(2, &cfg, 64 << 10, &err);
    ASSERT_TRUE(g) << err;
    const size_t counts[2] = {p.rank0, p.rank1};
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < 2; ++r)
      ASSERT_EQ(tpcommAllReduce(g->send[r], g->recv[r], counts[r], tpcommBfloat16, tpcommSum,
                                g->comms[r], g->streams[r]),
                tpcommSuccess);
    EXPECT_EQ(lastVariant(*g, 0), tpcommVariantP2pOneShotPullLL);
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(g->devs[r]);
      ASSERT_EQ(cudaStreamSynchronize(g->streams[r]), cudaSuccess) << "context lost";
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    printf("[ pull ll  ] %zu vs %zu: both ranks done in %.1f ms\n", p.rank0, p.rank1, ms);
    EXPECT_LT(ms, 1000) << "detected near the deadline, not by the fingerprints";
    for (int r = 0; r < 2; ++r) {
      tpcommResult_t async = tpcommSuccess;
      ASSERT_EQ(tpcommCommGetAsyncError(g->comms[r], &async), tpcommSuccess);
      EXPECT_EQ(async, tpcommInvalidUsage) << "rank " << r << ": " << tpcommGetLastError();
      const std::string msg = tpcommGetLastError();
      const std::string mine = "all-reduce of " + std::to_string(counts[r]) + " x bf16";
      const std::string theirs = "all-reduce of " + std::to_string(counts[1 - r]) + " x bf16";
      EXPECT_NE(msg.find("(this rank) " + mine), std::string::npos) << "rank " << r << ": " << msg;
      EXPECT_NE(msg.find("called " + theirs), std::string::npos) << "rank " << r << ": " << msg;
    }
  }
}

}  // namespace
}  // namespace tpcomm::test
