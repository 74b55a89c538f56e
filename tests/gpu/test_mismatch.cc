// Calls that disagree (docs/PROTOCOL.md, "Calls that disagree"): ranks that call one all-reduce
// with different counts, with equal bytes of different datatypes, or an all-reduce against a
// fused call, get tpcommInvalidUsage on every rank, naming both calls, long before the deadline;
// never a success with garbage. Before call fingerprints these calls returned success (equal
// bytes: garbage) or timed out after the deadline with no hint. Every algorithm, worlds 2 and 4
// (ranks sharing the GPU where there is one).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/gpu/harness.h"

namespace tpcomm::test {
namespace {

constexpr int kTimeoutMs = 5000;
constexpr double kDetectMs = 1000;

struct Algo {
  int algo;
  bool host_ll;  // host_oneshot over LL packets (else the host sentinel inboxes)
  const char* name;
};

// What rank 0 calls, and what every other rank calls.
enum class Kind { kAllReduce, kFused };
struct Call {
  Kind kind;
  size_t count;  // elements (fused: tokens x hidden)
  tpcommDataType_t dtype;
  const char* words;  // how the error message names it
};
struct Pair {
  const char* what;
  Call rank0, others;
};

struct FusedBufs {
  void *res_in = nullptr, *res_out = nullptr, *norm = nullptr, *gamma = nullptr;
  ~FusedBufs() {
    for (void* p : {res_in, res_out, norm, gamma}) cudaFree(p);
  }
};

constexpr size_t kHidden = 1024;

// Ranks sharing a GPU need every rank's grid resident at once: until grids are capped by
// occupancy, small grids where they share one (issue 20, "Ranks sharing a GPU").
int maxBlocksFor(int world) {
  return world > visibleGpus() ? 8 : 0;
}

// The fused call's buffers, allocated before any rank issues its call: cudaMalloc and the sync
// below would otherwise wait for a rank's kernel that is waiting for this rank (ranks share a GPU).
void prepare(Group& g, int r, const Call& k, FusedBufs& f) {
  if (k.kind == Kind::kAllReduce) return;
  cudaSetDevice(g.devs[r]);
  const size_t bytes = k.count * 2 + 16;
  if (!f.res_in) {
    cudaMalloc(&f.res_in, bytes);
    cudaMalloc(&f.res_out, bytes);
    cudaMalloc(&f.norm, bytes);
    cudaMalloc(&f.gamma, kHidden * 2);
    cudaMemset(f.res_in, 0, bytes);
    cudaMemset(f.gamma, 0, kHidden * 2);
    cudaDeviceSynchronize();
  }
}

tpcommResult_t issue(Group& g, int r, const Call& k, FusedBufs& f) {
  if (k.kind == Kind::kAllReduce)
    return tpcommAllReduce(g.send[r], g.recv[r], k.count, k.dtype, tpcommSum, g.comms[r],
                           g.streams[r]);
  cudaSetDevice(g.devs[r]);
  const tpcommRmsNormParams_t p = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  return tpcommAllReduceAddRmsNorm(g.send[r], f.res_in, f.res_out, f.norm, f.gamma,
                                   k.count / kHidden, kHidden, k.dtype, &p, g.comms[r],
                                   g.streams[r]);
}

// Runs the pair on a fresh group and checks that every rank reports it, quickly.
void expectCaught(int world, const Algo& a, const Pair& pair) {
  const std::string what =
      std::string(a.name) + " world=" + std::to_string(world) + " " + pair.what;
  tpcommConfig_t cfg = configFor(a.algo, maxBlocksFor(world), kTimeoutMs);
  if (a.host_ll) cfg.launchKnobs = kHostLLKnobs;
  std::string err;
  const size_t capacity = std::max(pair.rank0.count, pair.others.count) * 4;
  auto g = makeGroup(world, &cfg, capacity, &err);
  ASSERT_TRUE(g) << what << ": " << err;
  std::vector<FusedBufs> fused(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) prepare(*g, r, r == 0 ? pair.rank0 : pair.others, fused[r]);
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < world; ++r) {
    const Call& k = r == 0 ? pair.rank0 : pair.others;
    ASSERT_EQ(issue(*g, r, k, fused[r]), tpcommSuccess) << what << ": " << tpcommGetLastError();
  }
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaStreamSynchronize(g->streams[r]), cudaSuccess) << what << ": context lost";
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  printf("[ mismatch ] %s: every rank done in %.1f ms\n", what.c_str(), ms);
  EXPECT_LT(ms, kDetectMs) << what << ": detected near the deadline, not by the fingerprints";
  for (int r = 0; r < world; ++r) {
    tpcommResult_t async = tpcommSuccess;
    ASSERT_EQ(tpcommCommGetAsyncError(g->comms[r], &async), tpcommSuccess);
    EXPECT_EQ(async, tpcommInvalidUsage) << what << ": rank " << r << ": " << tpcommGetLastError();
    const std::string msg = tpcommGetLastError();
    const Call& mine = r == 0 ? pair.rank0 : pair.others;
    const Call& theirs = r == 0 ? pair.others : pair.rank0;
    EXPECT_NE(msg.find(std::string("(this rank) ") + mine.words), std::string::npos)
        << what << ": rank " << r << ": " << msg;
    EXPECT_NE(msg.find(std::string("called ") + theirs.words), std::string::npos)
        << what << ": rank " << r << ": " << msg;
    // Every later call fails at once with the same reason.
    EXPECT_EQ(tpcommAllReduce(g->send[r], g->recv[r], 16, tpcommBfloat16, tpcommSum, g->comms[r],
                              g->streams[r]),
              tpcommInvalidUsage)
        << what << ": rank " << r;
  }
}

std::vector<Pair> pairsFor(const Algo& a, size_t n, std::vector<std::string>* words) {
  auto name = [words](const char* kind, size_t count, const char* type) {
    words->push_back(std::string(kind) + " of " + std::to_string(count) + " x " + type);
    return words->back().c_str();
  };
  words->reserve(16);  // the pairs point into it
  std::vector<Pair> pairs;
  pairs.push_back({"count N vs 2N",
                   {Kind::kAllReduce, n, tpcommBfloat16, name("all-reduce", n, "bf16")},
                   {Kind::kAllReduce, 2 * n, tpcommBfloat16, name("all-reduce", 2 * n, "bf16")}});
  pairs.push_back({"bf16 2N vs fp32 N (equal bytes)",
                   {Kind::kAllReduce, 2 * n, tpcommBfloat16, name("all-reduce", 2 * n, "bf16")},
                   {Kind::kAllReduce, n, tpcommFloat32, name("all-reduce", n, "fp32")}});
  // A fused kernel serves one-shots of one step over peer memory (pushes and pulls: the kernels
  // with a check block) or the host sentinel inboxes, and the islands at every size.
  const bool fused = a.algo == tpcommAlgoOneShot || a.algo == tpcommAlgoOneShotPull ||
                     a.algo == tpcommAlgoIsland || a.algo == tpcommAlgoIslandPull ||
                     (a.algo == tpcommAlgoHostOneShot && !a.host_ll);
  if (fused && n % kHidden == 0 && n <= 4096)
    pairs.push_back(
        {"all-reduce vs all-reduce + add + RMSNorm",
         {Kind::kAllReduce, n, tpcommBfloat16, name("all-reduce", n, "bf16")},
         {Kind::kFused, n, tpcommBfloat16, name("all-reduce + add + RMSNorm", n, "bf16")}});
  return pairs;
}

class Mismatch : public ::testing::TestWithParam<Algo> {};

TEST_P(Mismatch, EveryRankReportsBothCalls) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const Algo a = GetParam();
  for (int world : {2, 4}) {
    if ((a.algo == tpcommAlgoIsland || a.algo == tpcommAlgoIslandPull) && world < 4) continue;
    // The lean one-shot (2 KiB), and calls of several steps (1 MiB and 2 MiB of bf16).
    for (size_t n : {size_t{1024}, size_t{1} << 19}) {
      std::vector<std::string> words;
      for (const Pair& pair : pairsFor(a, n, &words)) {
        expectCaught(world, a, pair);
        if (HasFatalFailure()) return;
      }
    }
    // A fresh group with matched calls still gets the exact sums.
    tpcommConfig_t cfg = configFor(a.algo, maxBlocksFor(world), kTimeoutMs);
    if (a.host_ll) cfg.launchKnobs = kHostLLKnobs;
    std::string err;
    auto g = makeGroup(world, &cfg, size_t{1} << 20, &err);
    ASSERT_TRUE(g) << err;
    Case c;
    c.count = 4096;
    const Outcome o = runCase(*g, c);
    EXPECT_EQ(o.result, tpcommSuccess) << a.name << " world=" << world << ": " << o.describe();
    EXPECT_EQ(o.wrong, 0u) << a.name << " world=" << world << ": " << o.describe();
  }
}

INSTANTIATE_TEST_SUITE_P(Algo, Mismatch,
                         ::testing::Values(Algo{tpcommAlgoOneShot, false, "oneshot"},
                                           Algo{tpcommAlgoTwoShot, false, "twoshot"},
                                           Algo{tpcommAlgoIsland, false, "island"},
                                           Algo{tpcommAlgoHostOneShot, false, "host_oneshot"},
                                           Algo{tpcommAlgoHostOneShot, true, "host_oneshot_ll"},
                                           Algo{tpcommAlgoHostTwoShot, false, "host_twoshot"},
                                           Algo{tpcommAlgoHostBulk, false, "host_bulk"},
                                           Algo{tpcommAlgoOneShotPull, false, "oneshot_pull"},
                                           Algo{tpcommAlgoTwoShotPull, false, "twoshot_pull"},
                                           Algo{tpcommAlgoIslandPull, false, "island_pull"},
                                           Algo{tpcommAlgoOneShotCe, false, "oneshot_ce"}),
                         [](const ::testing::TestParamInfo<Algo>& i) {
                           return std::string(i.param.name);
                         });

}  // namespace
}  // namespace tpcomm::test
