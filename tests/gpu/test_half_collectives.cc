// tpcommReduceScatter and tpcommAllGather on the GPU: every variant forced (the two-shot's halves
// over peer memory by push and by pull, and over host memory) and auto, worlds 2..8 (ranks sharing
// the GPU), three datatypes,
// counts from 1 element to a few MiB per rank (odd ones too), in place and out of place,
// misaligned pointers. Reduce-scatter must equal, bit for bit, the host's fp32 sum in rank order
// (and lie within the fp64 reference's tolerance); all-gather must be every rank's input exactly.
// The pull halves equal the push halves bit for bit, and every forced algorithm has a half. Then
// graphs, a call that disagrees across ranks, and a peer that never calls.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "tests/gpu/harness.h"

namespace tpcomm::test {
namespace {

constexpr size_t MiB = 1u << 20;
constexpr tpcommColl_t kRS = tpcommCollReduceScatter, kAG = tpcommCollAllGather;

const char* collName(tpcommColl_t coll) {
  return coll == kRS ? "reduce-scatter" : "all-gather";
}

tpcommResult_t issue(tpcommColl_t coll, const void* send, void* recv, size_t count,
                     tpcommDataType_t dt, tpcommComm_t comm, cudaStream_t s) {
  return coll == kRS ? tpcommReduceScatter(send, recv, count, dt, comm, s)
                     : tpcommAllGather(send, recv, count, dt, comm, s);
}

// The reduce-scatter's exact reference: run `rank` of every input summed in fp32 in rank order,
// rounded once (what the kernels compute, so the bits must match).
std::vector<uint8_t> fp32Reference(tpcommDataType_t dt, size_t count, int rank,
                                   const std::vector<std::vector<uint8_t>>& inputs) {
  const size_t es = elemSize(dt);
  std::vector<uint8_t> out(count * es);
  for (size_t i = 0; i < count; ++i) {
    const size_t at = (rank * count + i) * es;
    float acc = static_cast<float>(toDouble(dt, inputs[0].data() + at));
    for (size_t r = 1; r < inputs.size(); ++r)
      acc += static_cast<float>(toDouble(dt, inputs[r].data() + at));
    fromDouble(dt, acc, out.data() + i * es);
  }
  return out;
}

// One call of `coll` on every rank (count per rank), checked. Buffers: the whole message is
// world x count elements at `off` elements into g.send (reduce-scatter) or g.recv (all-gather);
// in place, the per-rank buffer is this rank's run of it. `outputs`, if given: every rank's output.
Outcome runRsag(Group& g, tpcommColl_t coll, const Case& c,
                std::vector<std::vector<uint8_t>>* outputs = nullptr) {
  Outcome o;
  const size_t es = elemSize(c.dtype), part = c.count * es, whole = part * g.world;
  const size_t off = c.offset_elems * es;
  std::vector<std::vector<uint8_t>> inputs;  // reduce-scatter: whole; all-gather: per rank
  for (int r = 0; r < g.world; ++r) {
    inputs.push_back(makeInput(c.dtype, coll == kRS ? c.count * g.world : c.count, c.seed, r));
    cudaSetDevice(g.devs[r]);
    cudaMemset(g.recv[r], 0xCD, g.capacity + 256);
    char* dst = coll == kRS  ? g.send[r] + off
                : c.in_place ? g.recv[r] + off + r * part
                             : g.send[r] + off;
    cudaMemcpy(dst, inputs.back().data(), inputs.back().size(), cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
  }
  tpcommGroupStart();  // the NCCL fallback needs every rank's call before any can progress
  for (int r = 0; r < g.world && o.result == tpcommSuccess; ++r) {
    char *send, *recv;
    if (coll == kRS) {
      send = g.send[r] + off;
      recv = c.in_place ? send + r * part : g.recv[r] + off;
    } else {
      recv = g.recv[r] + off;
      send = c.in_place ? recv + r * part : g.send[r] + off;
    }
    o.result = issue(coll, send, recv, c.count, c.dtype, g.comms[r], g.streams[r]);
    if (o.result != tpcommSuccess) o.error = tpcommGetLastError();
  }
  tpcommGroupEnd();
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    if (cudaStreamSynchronize(g.streams[r]) != cudaSuccess && o.result == tpcommSuccess)
      o.result = tpcommUnhandledCudaError;
    tpcommResult_t async = tpcommSuccess;
    tpcommCommGetAsyncError(g.comms[r], &async);
    if (async != tpcommSuccess && o.result == tpcommSuccess) {
      o.result = async;
      o.error = "async error on rank " + std::to_string(r) + ": " + tpcommGetLastError();
    }
  }
  if (o.result != tpcommSuccess) return o;
  std::vector<uint8_t> got(coll == kRS ? part : whole);
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    const char* out =
        coll == kRS ? (c.in_place ? g.send[r] + off + r * part : g.recv[r] + off) : g.recv[r] + off;
    cudaMemcpy(got.data(), out, got.size(), cudaMemcpyDeviceToHost);
    if (outputs) outputs->push_back(got);
    if (coll == kRS) {
      // Within the fp64 reference's tolerance, and the exact bits of the fp32 rank-order sum.
      std::vector<std::vector<uint8_t>> runs;
      for (const auto& in : inputs)
        runs.emplace_back(in.begin() + r * part, in.begin() + (r + 1) * part);
      const std::vector<uint8_t> ref = reference(c.dtype, c.count, runs);
      size_t fw = 0;
      const size_t w = countWrong(c.dtype, c.count, got.data(), ref.data(), runs, &fw);
      if (w && !o.wrong) o.first_wrong = fw;
      o.wrong += w;
      if (got != fp32Reference(c.dtype, c.count, r, inputs)) o.ranks_agree = false;
    } else {
      for (int p = 0; p < g.world; ++p)
        if (memcmp(got.data() + p * part, inputs[p].data(), part) != 0) {
          o.wrong += 1;
          o.ranks_agree = false;
        }
    }
    if (!(coll == kRS && c.in_place)) {  // nothing written past the output (else: input)
      uint8_t tail[16];
      cudaMemcpy(tail, out + got.size(), sizeof(tail), cudaMemcpyDeviceToHost);
      for (uint8_t b : tail)
        if (b != 0xCD) {
          o.wrong += 1;
          break;
        }
    }
  }
  return o;
}

std::string rsagName(tpcommColl_t coll, const Case& c, int algo, int world) {
  return std::string(collName(coll)) + " " + caseName(c, algo, world);
}

// light: bf16 and fp32, fewer sizes (worlds 3..8, whose host references take longer).
void runHalfMatrix(int world, int algo, bool light) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const tpcommConfig_t cfg = configFor(algo);
  std::vector<size_t> counts = {1, 7, 8, 31, 1000, 4097, 65537, (1u << 20) + 5};
  if (light) counts = {1, 31, 4097, 65537, (1u << 18) + 3};
  const size_t per_rank_max = 4 * MiB + 64;
  std::string err;
  auto g = makeGroup(world, &cfg, per_rank_max * world, &err);
  ASSERT_TRUE(g) << err;
  const auto start = std::chrono::steady_clock::now();
  int cases = 0;
  uint64_t before[tpcommNumVariants] = {};
  tpcommCommGetVariantStats(g->comms[0], before, tpcommNumVariants);
  for (tpcommDataType_t dt : {tpcommFloat32, tpcommFloat16, tpcommBfloat16}) {
    if (light && dt == tpcommFloat16) continue;
    for (size_t count : counts)
      for (tpcommColl_t coll : {kRS, kAG})
        for (int in_place = 0; in_place < 2; ++in_place)
          for (size_t offset : {size_t{0}, size_t{1}}) {
            if (light && offset == 1 && in_place) continue;
            const Case c{dt, count, in_place == 1, offset, 5000 + count + offset};
            const std::string name = rsagName(coll, c, algo, world);
            const Outcome o = runRsag(*g, coll, c);
            ++cases;
            ASSERT_EQ(o.result, tpcommSuccess) << name << ": " << o.describe();
            EXPECT_EQ(o.wrong, 0u) << name << ": " << o.describe();
            EXPECT_TRUE(o.ranks_agree) << name << ": not the exact bits";
          }
  }
  uint64_t after[tpcommNumVariants] = {};
  tpcommCommGetVariantStats(g->comms[0], after, tpcommNumVariants);
  std::string ran;
  for (int v = 0; v < tpcommNumVariants; ++v)
    if (after[v] != before[v])
      ran += std::string(ran.empty() ? "" : " ") + tpcommVariantName(v) + "=" +
             std::to_string(after[v] - before[v]);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printf("[ halves   ] %s world=%d: %d cases in %.1f s; ran %s\n", tpcommAlgoName(algo), world,
         cases, s, ran.c_str());
  const bool host = algo == tpcommAlgoHostTwoShot, pull = algo == tpcommAlgoTwoShotPull;
  if (algo != tpcommAlgoAuto) {
    const int rs = host   ? tpcommVariantHostReduceScatter
                   : pull ? tpcommVariantP2pReduceScatterPull
                          : tpcommVariantP2pReduceScatter;
    const int ag = host   ? tpcommVariantHostAllGather
                   : pull ? tpcommVariantP2pAllGatherPull
                          : tpcommVariantP2pAllGather;
    EXPECT_EQ(after[rs] - before[rs], static_cast<uint64_t>(cases / 2)) << ran;
    EXPECT_EQ(after[ag] - before[ag], static_cast<uint64_t>(cases / 2)) << ran;
  }
}

TEST(HalfCollectives, World2Auto) {
  runHalfMatrix(2, tpcommAlgoAuto, false);
}
TEST(HalfCollectives, World2P2p) {
  runHalfMatrix(2, tpcommAlgoTwoShot, false);
}
TEST(HalfCollectives, World2Host) {
  runHalfMatrix(2, tpcommAlgoHostTwoShot, false);
}
TEST(HalfCollectives, World2Pull) {
  runHalfMatrix(2, tpcommAlgoTwoShotPull, false);
}
// Worlds 3..8, ranks sharing the GPU: one test per world and transport.
class HalfWorlds : public ::testing::TestWithParam<std::tuple<int, int>> {};
TEST_P(HalfWorlds, Light) {
  runHalfMatrix(std::get<0>(GetParam()), std::get<1>(GetParam()), true);
}
INSTANTIATE_TEST_SUITE_P(HalfCollectives, HalfWorlds,
                         ::testing::Combine(::testing::Range(3, 9),
                                            ::testing::Values(tpcommAlgoTwoShot,
                                                              tpcommAlgoHostTwoShot,
                                                              tpcommAlgoTwoShotPull)),
                         [](const ::testing::TestParamInfo<std::tuple<int, int>>& i) {
                           return "World" + std::to_string(std::get<0>(i.param)) + "_" +
                                  tpcommAlgoName(std::get<1>(i.param));
                         });

// Many steps with a partial last one: small slots make every call dozens of steps.
TEST(HalfCollectives, ManyStepsWithAPartialLastStep) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (int algo : {tpcommAlgoTwoShot, tpcommAlgoHostTwoShot, tpcommAlgoTwoShotPull}) {
    tpcommConfig_t cfg = configFor(algo, 8);
    cfg.bufferBytes = 256 << 10;
    std::string err;
    auto g = makeGroup(3, &cfg, 3 * (1 * MiB + 64), &err);
    ASSERT_TRUE(g) << err;
    for (int rep = 0; rep < 6; ++rep) {
      const Case c{tpcommFloat32, 200003 + 4099u * rep, rep % 2 == 1, 0, 900u + rep};
      for (tpcommColl_t coll : {kRS, kAG}) {
        const Outcome o = runRsag(*g, coll, c);
        ASSERT_EQ(o.result, tpcommSuccess) << rsagName(coll, c, algo, 3) << ": " << o.describe();
        EXPECT_EQ(o.wrong, 0u) << rsagName(coll, c, algo, 3) << ": " << o.describe();
        EXPECT_TRUE(o.ranks_agree) << rsagName(coll, c, algo, 3);
      }
    }
  }
}

// Count 0 does nothing (NULL buffers allowed) and records nothing.
TEST(HalfCollectives, CountZeroLaunchesNothing) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  std::string err;
  auto g = makeGroup(2, nullptr, 4096, &err);
  ASSERT_TRUE(g) << err;
  for (tpcommColl_t coll : {kRS, kAG})
    EXPECT_EQ(issue(coll, nullptr, nullptr, 0, tpcommBfloat16, g->comms[0], g->streams[0]),
              tpcommSuccess)
        << tpcommGetLastError();
  tpcommStats_t st{};
  tpcommCommGetStats(g->comms[0], &st);
  uint64_t total = 0;
  for (uint64_t n : st.calls) total += n;
  EXPECT_EQ(total, 0u);
}

// Captured once per rank, replayed with fresh inputs: every replay exact. cfg: nullptr for auto;
// `rs`: the reduce-scatter variant the capture must have planned (None: whatever auto plans).
void replayGraphs(const tpcommConfig_t* cfg, tpcommVariant_t rs) {
  const int world = 2;
  const size_t count = 65537;  // bf16 per rank: odd, several vectors per thread
  const tpcommDataType_t dt = tpcommBfloat16;
  std::string err;
  auto g = makeGroup(world, cfg, 2 * count * world * 2 + 64, &err);
  ASSERT_TRUE(g) << err;
  const size_t part = count * 2;
  // Rank r: RS send at send[r], RS recv at recv[r]; AG of the RS output into recv[r] + 2 part.
  std::vector<cudaGraphExec_t> exec(world);
  std::vector<cudaGraph_t> graphs(world);
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaStreamBeginCapture(g->streams[r], cudaStreamCaptureModeGlobal), cudaSuccess);
  }
  for (int r = 0; r < world; ++r) {
    ASSERT_EQ(tpcommReduceScatter(g->send[r], g->recv[r], count, dt, g->comms[r], g->streams[r]),
              tpcommSuccess)
        << tpcommGetLastError();
  }
  tpcommCallInfo_t info{};
  tpcommCommGetLastCall(g->comms[0], &info);
  if (rs != tpcommVariantNone) {
    EXPECT_EQ(info.variant, rs) << info.reason;
  }
  for (int r = 0; r < world; ++r) {
    ASSERT_EQ(
        tpcommAllGather(g->recv[r], g->recv[r] + 2 * part, count, dt, g->comms[r], g->streams[r]),
        tpcommSuccess)
        << tpcommGetLastError();
  }
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaStreamEndCapture(g->streams[r], &graphs[r]), cudaSuccess);
  }
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaGraphInstantiate(&exec[r], graphs[r], 0), cudaSuccess);
    cudaGraphDestroy(graphs[r]);
  }
  tpcommStats_t st{};
  tpcommCommGetStats(g->comms[0], &st);
  EXPECT_EQ(st.captured, 2u);
  for (int round = 0; round < 5; ++round) {
    std::vector<std::vector<uint8_t>> in;
    for (int r = 0; r < world; ++r) {
      in.push_back(makeInput(dt, count * world, 300 + round, r));
      cudaSetDevice(g->devs[r]);
      cudaMemcpy(g->send[r], in.back().data(), in.back().size(), cudaMemcpyHostToDevice);
      cudaMemset(g->recv[r], 0xCD, 4 * part);
      cudaDeviceSynchronize();
    }
    for (int rep = 0; rep < 3; ++rep)
      for (int r = 0; r < world; ++r) {
        cudaSetDevice(g->devs[r]);
        ASSERT_EQ(cudaGraphLaunch(exec[r], g->streams[r]), cudaSuccess);
      }
    std::vector<uint8_t> want;  // the gathered reduce-scatter: every run's exact fp32 sum
    for (int p = 0; p < world; ++p) {
      const std::vector<uint8_t> run = fp32Reference(dt, count, p, in);
      want.insert(want.end(), run.begin(), run.end());
    }
    for (int r = 0; r < world; ++r) {
      cudaSetDevice(g->devs[r]);
      ASSERT_EQ(cudaStreamSynchronize(g->streams[r]), cudaSuccess);
      std::vector<uint8_t> got(want.size());
      cudaMemcpy(got.data(), g->recv[r] + 2 * part, got.size(), cudaMemcpyDeviceToHost);
      EXPECT_TRUE(got == want) << "round " << round << ", rank " << r;
    }
  }
  printf("[ halves   ] graph (%s): reduce-scatter + all-gather of %zu bf16 per rank, 15 replays\n",
         tpcommVariantName(info.variant), count);
  for (cudaGraphExec_t e : exec) cudaGraphExecDestroy(e);
}

TEST(HalfCollectives, GraphsReplayExactly) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  replayGraphs(nullptr, tpcommVariantNone);
}
TEST(HalfCollectives, GraphsReplayExactlyPull) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const tpcommConfig_t cfg = configFor(tpcommAlgoTwoShotPull);
  replayGraphs(&cfg, tpcommVariantP2pReduceScatterPull);
}

// The same inputs through the push halves and the pull halves: the same bits on every rank (the
// same fp32 rank-order sum; the gathered runs as their owners hold them).
TEST(HalfCollectives, PullHalvesEqualThePushHalvesBitForBit) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const int world = 4;
  const size_t per_rank_max = (1u << 18) + 64;
  std::vector<std::vector<uint8_t>> by_algo[2];  // [push, pull]: every case's outputs, in order
  int cases = 0;
  for (int i = 0; i < 2; ++i) {
    const int algo = i == 0 ? tpcommAlgoTwoShot : tpcommAlgoTwoShotPull;
    const tpcommConfig_t cfg = configFor(algo);
    std::string err;
    auto g = makeGroup(world, &cfg, per_rank_max * world * 4, &err);
    ASSERT_TRUE(g) << err;
    cases = 0;
    for (tpcommDataType_t dt : {tpcommFloat32, tpcommFloat16, tpcommBfloat16})
      for (size_t count : {size_t{3}, size_t{4097}, size_t{(1u << 18) + 1}})
        for (tpcommColl_t coll : {kRS, kAG}) {
          const Case c{dt, count, count == 4097, count == 3 ? size_t{1} : 0, 70 + count};
          const Outcome o = runRsag(*g, coll, c, &by_algo[i]);
          ++cases;
          ASSERT_EQ(o.result, tpcommSuccess) << rsagName(coll, c, algo, world) << o.describe();
          EXPECT_EQ(o.wrong, 0u) << rsagName(coll, c, algo, world) << ": " << o.describe();
        }
  }
  ASSERT_EQ(by_algo[0].size(), by_algo[1].size());
  size_t differ = 0;
  for (size_t k = 0; k < by_algo[0].size(); ++k) differ += by_algo[0][k] != by_algo[1][k];
  printf("[ halves   ] push vs pull, world %d: %d cases, %zu rank outputs, %zu differ\n", world,
         cases, by_algo[0].size(), differ);
  EXPECT_EQ(differ, 0u);
}

// Every forced peer-memory algorithm has a half (the pull ones theirs; the copy-engine one-shot,
// on a fabric whose stores hold, the push halves), and it runs exactly.
TEST(HalfCollectives, EveryForcedPeerAlgorithmHasAHalf) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const struct {
    int algo;
    tpcommVariant_t rs, ag;
  } rows[] = {
      {tpcommAlgoOneShotPull, tpcommVariantP2pReduceScatterPull, tpcommVariantP2pAllGatherPull},
      {tpcommAlgoTwoShotPull, tpcommVariantP2pReduceScatterPull, tpcommVariantP2pAllGatherPull},
      {tpcommAlgoOneShotCe, tpcommVariantP2pReduceScatter, tpcommVariantP2pAllGather},
      {tpcommAlgoIsland, tpcommVariantP2pReduceScatter, tpcommVariantP2pAllGather},
  };
  for (const auto& row : rows) {
    const tpcommConfig_t cfg = configFor(row.algo);
    const int world = row.algo == tpcommAlgoIsland ? 4 : 2;
    std::string err;
    auto g = makeGroup(world, &cfg, 4 * MiB, &err);
    ASSERT_TRUE(g) << tpcommAlgoName(row.algo) << ": " << err;
    for (tpcommColl_t coll : {kRS, kAG}) {
      const Case c{tpcommBfloat16, 4097, false, 0, 31};
      const Outcome o = runRsag(*g, coll, c);
      const std::string name = rsagName(coll, c, row.algo, world);
      ASSERT_EQ(o.result, tpcommSuccess) << name << ": " << o.describe();
      EXPECT_EQ(o.wrong, 0u) << name << ": " << o.describe();
      EXPECT_TRUE(o.ranks_agree) << name;
      tpcommCallInfo_t info{};
      tpcommCommGetLastCall(g->comms[0], &info);
      EXPECT_EQ(info.variant, coll == kRS ? row.rs : row.ag) << name << ": " << info.reason;
      printf("[ halves   ] forced %s: %s ran %s\n", tpcommAlgoName(row.algo), collName(coll),
             tpcommVariantName(info.variant));
    }
  }
}

// A reduce-scatter on rank 0 against an all-gather or all-reduce of the same count elsewhere:
// every rank reports both calls (the fingerprints' kinds), fast.
TEST(HalfCollectives, MismatchNamesBothCalls) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const size_t n = 4096;
  for (int algo : {tpcommAlgoTwoShot, tpcommAlgoHostTwoShot, tpcommAlgoTwoShotPull})
    for (int other = 0; other < 2; ++other) {
      const tpcommConfig_t cfg = configFor(algo, 0, 5000);
      std::string err;
      auto g = makeGroup(2, &cfg, n * 2 * 2 * 4, &err);
      ASSERT_TRUE(g) << err;
      const auto t0 = std::chrono::steady_clock::now();
      ASSERT_EQ(tpcommReduceScatter(g->send[0], g->recv[0], n, tpcommBfloat16, g->comms[0],
                                    g->streams[0]),
                tpcommSuccess);
      const tpcommResult_t r1 = other == 0
                                    ? tpcommAllGather(g->send[1], g->recv[1], n, tpcommBfloat16,
                                                      g->comms[1], g->streams[1])
                                    : tpcommAllReduce(g->send[1], g->recv[1], n, tpcommBfloat16,
                                                      tpcommSum, g->comms[1], g->streams[1]);
      ASSERT_EQ(r1, tpcommSuccess) << tpcommGetLastError();
      for (int r = 0; r < 2; ++r) {
        cudaSetDevice(g->devs[r]);
        ASSERT_EQ(cudaStreamSynchronize(g->streams[r]), cudaSuccess);
      }
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const char* theirs = other == 0 ? "all-gather" : "all-reduce";
      printf("[ halves   ] %s: reduce-scatter vs %s caught in %.1f ms\n", tpcommAlgoName(algo),
             theirs, ms);
      EXPECT_LT(ms, 1000.0) << "detected near the deadline, not by the fingerprints";
      for (int r = 0; r < 2; ++r) {
        tpcommResult_t async = tpcommSuccess;
        tpcommCommGetAsyncError(g->comms[r], &async);
        EXPECT_EQ(async, tpcommInvalidUsage) << "rank " << r;
        const std::string msg = tpcommGetLastError();
        EXPECT_NE(msg.find("reduce-scatter of 4096 x bf16"), std::string::npos) << msg;
        EXPECT_NE(msg.find(std::string(theirs) + " of 4096 x bf16"), std::string::npos) << msg;
      }
    }
}

// A peer that never calls: the other rank's call ends in tpcommTimeout within the timeout and a
// margin, and the communicator then refuses every call with it.
TEST(HalfCollectives, DeadPeerIsATimeout) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (int algo : {tpcommAlgoTwoShot, tpcommAlgoHostTwoShot, tpcommAlgoTwoShotPull})
    for (tpcommColl_t coll : {kRS, kAG}) {
      const tpcommConfig_t cfg = configFor(algo, 0, 300);
      std::string err;
      auto g = makeGroup(2, &cfg, 1 * MiB, &err);
      ASSERT_TRUE(g) << err;
      const auto t0 = std::chrono::steady_clock::now();
      ASSERT_EQ(
          issue(coll, g->send[0], g->recv[0], 1000, tpcommFloat32, g->comms[0], g->streams[0]),
          tpcommSuccess)
          << tpcommGetLastError();
      cudaSetDevice(g->devs[0]);
      ASSERT_EQ(cudaStreamSynchronize(g->streams[0]), cudaSuccess) << "context lost";
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      printf("[ halves   ] %s %s, peer never called: rank 0 done in %.1f ms (timeout 300)\n",
             tpcommAlgoName(algo), collName(coll), ms);
      EXPECT_LT(ms, 3000.0);
      tpcommResult_t async = tpcommSuccess;
      tpcommCommGetAsyncError(g->comms[0], &async);
      EXPECT_EQ(async, tpcommTimeout) << tpcommGetLastError();
      EXPECT_EQ(
          issue(coll, g->send[0], g->recv[0], 1000, tpcommFloat32, g->comms[0], g->streams[0]),
          tpcommTimeout);
    }
}

// Where two GPUs are lent: NCCL serves the halves when forced, counted as calls of nccl.
TEST(HalfCollectives, NcclFallbackServesBoth) {
  if (visibleGpus() < 2) GTEST_SKIP() << "NCCL needs 2 distinct GPUs";
  const tpcommConfig_t cfg = configFor(tpcommAlgoNccl);
  std::string err;
  auto g = makeGroup(2, &cfg, 4 * MiB, &err);
  ASSERT_TRUE(g) << err;
  for (tpcommColl_t coll : {kRS, kAG}) {
    const Case c{tpcommFloat32, 4097, false, 0, 77};
    const Outcome o = runRsag(*g, coll, c);
    EXPECT_EQ(o.result, tpcommSuccess) << o.describe();
    EXPECT_EQ(o.wrong, 0u) << o.describe();
    tpcommCallInfo_t info{};
    tpcommCommGetLastCall(g->comms[0], &info);
    EXPECT_EQ(info.variant, tpcommVariantNccl) << info.reason;
  }
}

}  // namespace
}  // namespace tpcomm::test
