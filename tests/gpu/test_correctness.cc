// The correctness matrix: every algorithm (forced) and auto, three datatypes, sizes from 1
// element to 64 MiB, in place and out of place, misaligned pointers; world 2 on real GPUs and
// 3..8 with ranks sharing GPUs. Every result is checked against the fp64 host reference and for
// bit-identity across ranks.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "kernels/runtime/variant_table.h"
#include "tests/gpu/harness.h"

namespace tpcomm::test {
namespace {

constexpr size_t MiB = 1u << 20;
const tpcommDataType_t kTypes[] = {tpcommFloat32, tpcommFloat16, tpcommBfloat16};

std::vector<size_t> countsFor(tpcommDataType_t dt, bool big, bool light) {
  // 1000 and 2^16 (and 2^18 in the full list) are whole 16-byte vectors: with aligned buffers
  // the one-shot runs its lean kernel there (leanFits, src/plan/planner.cc), up to one full 1 MiB
  // step.
  std::vector<size_t> c = {1, 7, 8, 31, 1000, 4097, 1u << 16, 65537, 1u << 18, (1u << 20) + 5};
  if (light) c = {1, 31, 1000, 4097, 1u << 16, 65537, (1u << 20) + 5};
  // The light matrix takes the large sizes in bf16 only (what TP inference all-reduces): the
  // fp64 reference of a 64 MiB call at world 8 is most of the matrix's time.
  if (big && !(light && dt != tpcommBfloat16)) {
    c.push_back(16 * MiB / elemSize(dt));
    c.push_back(64 * MiB / elemSize(dt));
  }
  return c;
}

// light: the reduced matrix used for world sizes 3..8 (bf16 and fp32, fewer sizes and offsets).
// big: up to 64 MiB (light: in bf16). host_ll: host_oneshot takes LL packets for every call
// (kHostLLKnobs). Prints the cases run, the time and the grid of the largest call.
void runMatrix(int world, int algo, bool big, int max_blocks, bool light = false,
               bool host_ll = false, int timeout_ms = 20000) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  tpcommConfig_t cfg = configFor(algo, max_blocks, timeout_ms);
  if (host_ll) cfg.launchKnobs = kHostLLKnobs;
  std::string err;
  auto g = makeGroup(world, &cfg, big ? 64 * MiB : 4 * MiB + 64, &err);
  ASSERT_TRUE(g) << err;
  const auto start = std::chrono::steady_clock::now();
  int cases = 0;
  tpcommCallInfo_t largest{};
  struct Report {  // printed however the matrix ends (an ASSERT returns early)
    const int& cases;
    const tpcommCallInfo_t& largest;
    std::chrono::steady_clock::time_point start;
    std::string what;
    ~Report() {
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      printf("[ matrix   ] %s: %d cases in %.1f s; largest call %zu bytes: %s, %d blocks (%s)\n",
             what.c_str(), cases, s, largest.bytes, tpcommVariantName(largest.variant),
             largest.blocks, largest.reason);
    }
  } report{cases, largest, start,
           std::string(tpcommAlgoName(algo)) + " world=" + std::to_string(world) +
               (max_blocks ? " maxBlocks=" + std::to_string(max_blocks) : " default grids")};
  for (tpcommDataType_t dt : kTypes) {
    if (light && dt == tpcommFloat16) continue;
    for (size_t count : countsFor(dt, big, light)) {
      const bool huge = count * elemSize(dt) >= 16 * MiB;
      for (int in_place = 0; in_place < 2; ++in_place) {
        for (size_t offset : {size_t{0}, size_t{1}, size_t{3}}) {
          if (huge && offset != 0) continue;  // misalignment is covered at smaller sizes
          if (light && offset == 3) continue;
          Case c{dt, count, in_place == 1, offset, 1000 + count + offset};
          const std::string name = caseName(c, algo, world);
          const Outcome o = runCase(*g, c);
          ++cases;
          tpcommCallInfo_t info{};
          if (tpcommCommGetLastCall(g->comms[0], &info) == tpcommSuccess &&
              info.bytes >= largest.bytes)
            largest = info;
          ASSERT_EQ(o.result, tpcommSuccess) << name << ": " << o.describe();
          EXPECT_EQ(o.wrong, 0u) << name << ": " << o.describe();
          EXPECT_TRUE(o.ranks_agree) << name << ": ranks' outputs differ";
        }
      }
    }
  }
}

TEST(Correctness, World2Auto) {
  runMatrix(2, tpcommAlgoAuto, true, 0);
}
TEST(Correctness, World2OneShot) {
  runMatrix(2, tpcommAlgoOneShot, true, 0);
}
TEST(Correctness, World2TwoShot) {
  runMatrix(2, tpcommAlgoTwoShot, true, 0);
}
TEST(Correctness, World2TwoShotSmallGrid) {
  runMatrix(2, tpcommAlgoTwoShot, false, 3);
}

// The host-memory transport, forced on P2P hardware: the GPU-to-host traffic is real PCIe. The
// one-shot takes the sentinel protocol for calls that fit one step of its host inboxes (up to
// 512 KiB here) and LL packets above, so the matrix alternates the two on one communicator.
TEST(Correctness, World2HostOneShot) {
  runMatrix(2, tpcommAlgoHostOneShot, true, 0);
}
// The same with LL packets for every call.
TEST(Correctness, World2HostOneShotLL) {
  runMatrix(2, tpcommAlgoHostOneShot, false, 0, /*light=*/false, /*host_ll=*/true);
}
TEST(Correctness, World2HostTwoShot) {
  runMatrix(2, tpcommAlgoHostTwoShot, true, 0);
}
// The bulk protocol over host memory (outboxes, a flag per block and step).
TEST(Correctness, World2HostBulk) {
  runMatrix(2, tpcommAlgoHostBulk, true, 0);
}

// The pull variants over peer memory (each rank's data in its own outbox, read by its peers):
// the one-shot (lean, general, split multi-step) and the two-shot, the full matrix.
TEST(Correctness, World2OneShotPull) {
  runMatrix(2, tpcommAlgoOneShotPull, true, 0);
}
TEST(Correctness, World2TwoShotPull) {
  runMatrix(2, tpcommAlgoTwoShotPull, true, 0);
}
TEST(Correctness, World2TwoShotPullSmallGrid) {
  runMatrix(2, tpcommAlgoTwoShotPull, false, 3);
}

// The copy-engine one-shot: peer copies and a reduce kernel (oneshot_ce.cu), the whole matrix.
TEST(Correctness, World2OneShotCe) {
  runMatrix(2, tpcommAlgoOneShotCe, true, 0);
}
TEST(Correctness, World2Nccl) {
  if (visibleGpus() < 2) GTEST_SKIP() << "NCCL needs 2 distinct GPUs";
  runMatrix(2, tpcommAlgoNccl, false, 0);
}

// Calls of many steps whose last step is partial, repeated: with small staging slots every call
// here takes dozens of steps. A thread's share of a slot must not move between steps (a peer's
// short last step once overwrote entries a slower thread had not read yet: docs/PROTOCOL.md).
TEST(Correctness, ManyStepsWithAPartialLastStep) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (int world : {2, 3}) {
    for (int algo :
         {tpcommAlgoOneShot, tpcommAlgoTwoShot, tpcommAlgoHostOneShot, tpcommAlgoHostTwoShot,
          tpcommAlgoHostBulk, tpcommAlgoOneShotPull, tpcommAlgoTwoShotPull, tpcommAlgoOneShotCe}) {
      tpcommConfig_t cfg = configFor(algo, 8, 20000);
      cfg.bufferBytes = 256 << 10;  // 4 slots of 256 KiB (host inboxes, pull outboxes: 64 KiB)
      std::string err;
      auto g = makeGroup(world, &cfg, 5 * MiB, &err);
      ASSERT_TRUE(g) << err;
      for (int rep = 0; rep < 12; ++rep) {
        const size_t count = (1u << 20) + 5 + 4099 * rep;  // fp32: ~4 MiB, never a whole step
        ASSERT_LE(count * 4, 5 * MiB);
        Case c{tpcommFloat32, count, rep % 2 == 1, 0, 777u + rep};
        const Outcome o = runCase(*g, c);
        ASSERT_EQ(o.result, tpcommSuccess) << caseName(c, algo, world) << ": " << o.describe();
        EXPECT_EQ(o.wrong, 0u) << caseName(c, algo, world) << ": " << o.describe();
        EXPECT_TRUE(o.ranks_agree) << caseName(c, algo, world);
      }
    }
  }
}

// The bulk host protocol's split path, small enough for the sanitizers (run_suite.sh runs
// racecheck and synccheck on it): 16 KiB outbox slots, so each call takes dozens of steps with
// pushing and reducing warps held in step by named barriers, and a flag per block and step.
TEST(Correctness, HostBulkSplitSteps) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  tpcommConfig_t cfg = configFor(tpcommAlgoHostBulk, 4, 20000);
  cfg.bufferBytes = 256 << 10;  // host inbox slots of 64 KiB, bulk outbox slots of 16 KiB
  std::string err;
  auto g = makeGroup(2, &cfg, 1 * MiB, &err);
  ASSERT_TRUE(g) << err;
  for (int rep = 0; rep < 4; ++rep) {
    const size_t count = 100003 + 4099 * rep;  // fp32: ~400 KiB, ~25 steps, a partial last one
    Case c{tpcommFloat32, count, rep % 2 == 1, rep == 3 ? size_t{1} : size_t{0}, 4242u + rep};
    const Outcome o = runCase(*g, c);
    ASSERT_EQ(o.result, tpcommSuccess)
        << caseName(c, tpcommAlgoHostBulk, 2) << ": " << o.describe();
    EXPECT_EQ(o.wrong, 0u) << caseName(c, tpcommAlgoHostBulk, 2) << ": " << o.describe();
    EXPECT_TRUE(o.ranks_agree) << caseName(c, tpcommAlgoHostBulk, 2);
  }
}

// The LL protocol's entries, stored half-split in 1 KiB blocks (LLProto::half), at a world whose
// per-rank regions do not start on a block: 64 KiB inbox slots hold 682 entries per source at
// world 3, so blocks straddle two ranks' regions. Small enough for memcheck (run_suite.sh).
TEST(Correctness, HostLLBlocksAcrossRegions) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (int algo : {tpcommAlgoHostOneShot, tpcommAlgoHostTwoShot}) {
    tpcommConfig_t cfg = configFor(algo, 4, 20000);
    cfg.bufferBytes = 256 << 10;     // host inbox slots of 64 KiB
    cfg.launchKnobs = kHostLLKnobs;  // one-shot: LL at every size
    std::string err;
    auto g = makeGroup(3, &cfg, 256 << 10, &err);
    ASSERT_TRUE(g) << err;
    const Case cases[] = {{tpcommBfloat16, 1000, false, 0, 91u},
                          {tpcommFloat32, 7, true, 1, 92u},
                          {tpcommFloat32, 40000, false, 1, 93u},  // 160 KiB: several steps
                          {tpcommBfloat16, 65537, true, 0, 94u}};
    for (const Case& c : cases) {
      const Outcome o = runCase(*g, c);
      ASSERT_EQ(o.result, tpcommSuccess) << caseName(c, algo, 3) << ": " << o.describe();
      EXPECT_EQ(o.wrong, 0u) << caseName(c, algo, 3) << ": " << o.describe();
      EXPECT_TRUE(o.ranks_agree) << caseName(c, algo, 3);
    }
  }
}

// host_oneshot switching protocol by size on one communicator: calls that fit one step of the
// host sentinel inboxes (a third of 1 MiB at world 3) take the sentinel protocol (the lean kernel
// where aligned, the general one where not), larger calls LL packets, in an order that makes
// each protocol's slots reused after calls of the other. Small enough for memcheck.
TEST(Correctness, HostSentinelAndLLAlternate) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const tpcommConfig_t cfg = configFor(tpcommAlgoHostOneShot, 4, 20000);
  std::string err;
  auto g = makeGroup(3, &cfg, 1 * MiB, &err);
  ASSERT_TRUE(g) << err;
  const Case cases[] = {{tpcommBfloat16, 1000, false, 0, 61u},   // sentinel, lean kernel
                        {tpcommFloat32, 40000, true, 1, 62u},    // sentinel, general kernel
                        {tpcommFloat32, 200000, false, 0, 63u},  // 800 KB: LL
                        {tpcommBfloat16, 65536, true, 0, 64u},   // sentinel
                        {tpcommFloat16, 4097, false, 3, 65u},    // sentinel, misaligned
                        {tpcommFloat32, 250000, true, 0, 66u}};  // LL, in place
  for (int round = 0; round < 3; ++round) {
    for (const Case& c : cases) {
      const Outcome o = runCase(*g, c);
      const std::string name = caseName(c, tpcommAlgoHostOneShot, 3);
      ASSERT_EQ(o.result, tpcommSuccess) << name << ": " << o.describe();
      EXPECT_EQ(o.wrong, 0u) << name << ": " << o.describe();
      EXPECT_TRUE(o.ranks_agree) << name;
    }
  }
}

// The island algorithm, forced, at every world it serves (4, 6, 8: ranks share GPUs, small grids
// so that every rank's kernel is resident). Islands follow the GPUs where the ranks span two
// (ranks 0,2,.. and 1,3,..), else the halves of the ranks: every datatype, odd sizes, misaligned
// pointers, in place and out of place.
class IslandWorld : public ::testing::TestWithParam<int> {};

TEST_P(IslandWorld, FullMatrix) {
  runMatrix(GetParam(), tpcommAlgoIsland, false, 4);
}

// Dozens of steps per call with a partial last one (small slots), every datatype: a thread's
// offsets must stay fixed for the call (docs/PROTOCOL.md), as in ManyStepsWithAPartialLastStep.
void islandManySteps(int world, int algo) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  tpcommConfig_t cfg = configFor(algo, 8, 20000);
  // 4 slots of 256 KiB: a world-8 island step is ~100 KiB of data; island_pull's outbox slots
  // (64 KiB, m + 3 areas) hold ~36 KiB a step
  cfg.bufferBytes = 256 << 10;
  std::string err;
  auto g = makeGroup(world, &cfg, 5 * MiB, &err);
  ASSERT_TRUE(g) << err;
  for (tpcommDataType_t dt : kTypes) {
    for (int rep = 0; rep < 8; ++rep) {
      const size_t count = (1u << 20) + 5 + 4099 * rep;  // never a whole step
      Case c{dt, count, rep % 2 == 1, rep % 3 == 2 ? size_t{1} : size_t{0}, 555u + rep};
      const Outcome o = runCase(*g, c);
      ASSERT_EQ(o.result, tpcommSuccess) << caseName(c, algo, world) << ": " << o.describe();
      EXPECT_EQ(o.wrong, 0u) << caseName(c, algo, world) << ": " << o.describe();
      EXPECT_TRUE(o.ranks_agree) << caseName(c, algo, world);
    }
  }
}

TEST_P(IslandWorld, ManyStepsWithAPartialLastStep) {
  islandManySteps(GetParam(), tpcommAlgoIsland);
}
INSTANTIATE_TEST_SUITE_P(World, IslandWorld, ::testing::Values(4, 6, 8));

// The island over pull (island_pull.cu: every leg by loads from the owners' outboxes), forced,
// at the same worlds and with the same matrices as the push island.
class IslandPullWorld : public ::testing::TestWithParam<int> {};

TEST_P(IslandPullWorld, FullMatrix) {
  runMatrix(GetParam(), tpcommAlgoIslandPull, false, 4);
}

TEST_P(IslandPullWorld, ManyStepsWithAPartialLastStep) {
  islandManySteps(GetParam(), tpcommAlgoIslandPull);
}

// island_pull exchanges the same fp32 partials as the push island and adds them in the same
// order: its outputs are the push island's, bit for bit, on every rank. The same inputs go
// through a push-island group and an island_pull group side by side (the same islands: both
// split the same ranks on the same GPUs); one step and several (small slots), every datatype,
// misaligned and in place.
TEST_P(IslandPullWorld, SameBitsAsThePushIsland) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const int world = GetParam();
  std::unique_ptr<Group> groups[2];
  const int algos[2] = {tpcommAlgoIsland, tpcommAlgoIslandPull};
  for (int i = 0; i < 2; ++i) {
    tpcommConfig_t cfg = configFor(algos[i], 4, 20000);
    cfg.bufferBytes = 1 << 20;  // pull outbox slots of 256 KiB: the larger calls take steps
    std::string err;
    groups[i] = makeGroup(world, &cfg, 4 * MiB + 64, &err);
    ASSERT_TRUE(groups[i]) << err;
  }
  const auto start = std::chrono::steady_clock::now();
  size_t cases = 0, bytes = 0;
  for (tpcommDataType_t dt : kTypes) {
    const size_t es = elemSize(dt);
    for (size_t count : {size_t{1}, size_t{4097}, size_t{65537}, 3 * MiB / es + 5}) {
      for (int variant = 0; variant < 2; ++variant) {  // 0: aligned, out of place; 1: misaligned,
        const size_t offset = variant;                 //    in place
        const bool in_place = variant == 1;
        std::vector<std::vector<uint8_t>> out[2];
        for (int i = 0; i < 2; ++i) {
          Group& g = *groups[i];
          for (int r = 0; r < world; ++r) {
            cudaSetDevice(g.devs[r]);
            const std::vector<uint8_t> in = makeInput(dt, count, 9000 + count + variant, r);
            char* send = g.send[r] + offset * es;
            char* recv = in_place ? send : g.recv[r] + offset * es;
            ASSERT_EQ(cudaMemcpy(send, in.data(), in.size(), cudaMemcpyHostToDevice), cudaSuccess);
            if (!in_place) {
              ASSERT_EQ(cudaMemset(recv, 0xCD, in.size()), cudaSuccess);
            }
          }
          for (int r = 0; r < world; ++r) {
            char* send = g.send[r] + offset * es;
            char* recv = in_place ? send : g.recv[r] + offset * es;
            ASSERT_EQ(tpcommAllReduce(send, recv, count, dt, tpcommSum, g.comms[r], g.streams[r]),
                      tpcommSuccess)
                << tpcommGetLastError();
          }
          for (int r = 0; r < world; ++r) {
            ASSERT_TRUE(drained(g, r));
            char* recv = in_place ? g.send[r] + offset * es : g.recv[r] + offset * es;
            out[i].emplace_back(count * es);
            ASSERT_EQ(cudaMemcpy(out[i].back().data(), recv, count * es, cudaMemcpyDeviceToHost),
                      cudaSuccess);
          }
          tpcommCallInfo_t info{};
          ASSERT_EQ(tpcommCommGetLastCall(g.comms[0], &info), tpcommSuccess);
          ASSERT_EQ(info.algo, algos[i]) << info.reason;
        }
        for (int r = 0; r < world; ++r) {
          size_t differ = 0, first = 0;
          for (size_t b = 0; b < count * es; ++b)
            if (out[0][r][b] != out[1][r][b] && differ++ == 0) first = b / es;
          EXPECT_EQ(differ, 0u) << "world " << world << " dtype " << static_cast<int>(dt)
                                << " count " << count << (in_place ? " in place" : "") << " offset "
                                << offset << " rank " << r << ": bytes differ from element "
                                << first;
        }
        ++cases;
        bytes += count * es * world;
      }
    }
  }
  printf("[ bits     ] island_pull == island at world %d: %zu cases, %zu bytes compared, %.1f s\n",
         world, cases, bytes,
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}
INSTANTIATE_TEST_SUITE_P(World, IslandPullWorld, ::testing::Values(4, 6, 8));

// Forcing island or island_pull where it cannot run (odd world, world 2) fails the call, saying
// why.
TEST(Correctness, IslandRefusedAtOddWorldsAndWorld2) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (int algo : {tpcommAlgoIsland, tpcommAlgoIslandPull})
    for (int world : {2, 3}) {
      const tpcommConfig_t cfg = configFor(algo, 4);
      std::string err;
      auto g = makeGroup(world, &cfg, 1 << 16, &err);
      ASSERT_TRUE(g) << err;
      for (int r = 0; r < world; ++r) {  // each call fails at once: no group needed
        EXPECT_EQ(tpcommAllReduce(g->send[r], g->recv[r], 1000, tpcommFloat32, tpcommSum,
                                  g->comms[r], g->streams[r]),
                  tpcommUnsupported);
        const std::string why = tpcommGetLastError();
        EXPECT_NE(
            why.find(std::string(tpcommAlgoName(algo)) + " needs an even world of at least 4"),
            std::string::npos)
            << why;
      }
    }
}

// World sizes above the GPU count: ranks share GPUs, with the default grids (no maxBlocks), which
// the library caps so that every rank's grid is resident at once (src/plan/co_residency.h).
// Without the cap, a world of 3 or more on one H200 waited for the deadline above a few hundred
// KiB (each rank's grid filled the GPU, so the peers' kernels could not start): a 5 s deadline
// makes that a quick failure. Every size of the matrix, 1 element to 64 MiB.
class SharedWorld : public ::testing::TestWithParam<int> {};
constexpr int kSharedTimeoutMs = 5000;

// Auto: the whole matrix (every datatype, offset and placement).
TEST_P(SharedWorld, AutoFullMatrixDefaultGrids) {
  runMatrix(GetParam(), tpcommAlgoAuto, /*big=*/true, /*max_blocks=*/0, /*light=*/false,
            /*host_ll=*/false, kSharedTimeoutMs);
}

// Every algorithm forced (island at the worlds it serves): the reduced matrix, 64 MiB included.
TEST_P(SharedWorld, EveryAlgorithmDefaultGrids) {
  const int world = GetParam();
  for (int algo : {tpcommAlgoOneShot, tpcommAlgoTwoShot, tpcommAlgoIsland, tpcommAlgoHostOneShot,
                   tpcommAlgoHostTwoShot, tpcommAlgoHostBulk, tpcommAlgoOneShotPull,
                   tpcommAlgoTwoShotPull, tpcommAlgoOneShotCe, tpcommAlgoIslandPull}) {
    const bool island = algo == tpcommAlgoIsland || algo == tpcommAlgoIslandPull;
    if (island && !(world >= 4 && world % 2 == 0)) continue;
    SCOPED_TRACE(tpcommAlgoName(algo));
    runMatrix(world, algo, /*big=*/true, /*max_blocks=*/0, /*light=*/true, /*host_ll=*/false,
              kSharedTimeoutMs);
    if (HasFailure()) return;  // a broken algorithm fails once per world, not once per algorithm
  }
}
INSTANTIATE_TEST_SUITE_P(World, SharedWorld, ::testing::Values(3, 4, 5, 6, 7, 8));

// Every full-precision all-reduce row of the variant table, forced by name
// (TPCOMM_KNOBS=variant=<name>): a new row is tested here without a line of this test changing.
// Each case of the light matrix (up to 4 MiB) that the row takes must run that row, match the
// reference and agree bit for bit across ranks; a case it cannot take (a lean row's misaligned
// call, a single-step row's large one) must be refused by name before any rank launches, never
// run as something else. The quantized wire's rows have their own bounds (test_wire.cc).
class RowWorld : public ::testing::TestWithParam<int> {};

TEST_P(RowWorld, EveryAllReduceRowByName) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const int world = GetParam();
  int rows = 0;
  const VariantRow* table = variantRows(&rows);
  int tested = 0;
  for (int i = 0; i < rows; ++i) {
    const VariantRow& row = table[i];
    if (row.collective != VariantCollective::kAllReduce || !row.kernels || row.wire != 0) continue;
    if (row.island && !(world >= 4 && world % 2 == 0)) continue;
    SCOPED_TRACE(row.name);
    // Auto: init sets up what a forced row runs over (the host segment, the copy engines'
    // landing slots), as for a forced algorithm.
    tpcommConfig_t cfg = configFor(tpcommAlgoAuto, 0, kSharedTimeoutMs);
    cfg.ncclMode = tpcommNcclOff;
    const std::string knobs = std::string("variant=") + row.name;
    cfg.launchKnobs = knobs.c_str();
    std::string err;
    auto g = makeGroup(world, &cfg, 4 * MiB + 64, &err);
    ASSERT_TRUE(g) << err;
    int ran = 0, refused = 0;
    for (tpcommDataType_t dt : {tpcommFloat32, tpcommBfloat16})
      for (size_t count : countsFor(dt, /*big=*/false, /*light=*/true))
        for (size_t offset : {size_t{0}, size_t{1}}) {
          const Case c{dt, count, /*in_place=*/offset == 1, offset, 7000 + count + offset};
          const std::string name = caseName(c, tpcommAlgoAuto, world);
          const Outcome o = runCase(*g, c);
          if (o.result == tpcommUnsupported &&
              o.error.find(knobs + " (forced) cannot take this call") != std::string::npos) {
            ++refused;
            continue;
          }
          ASSERT_EQ(o.result, tpcommSuccess) << name << ": " << o.describe();
          EXPECT_EQ(o.wrong, 0u) << name << ": " << o.describe();
          EXPECT_TRUE(o.ranks_agree) << name << ": ranks' outputs differ";
          for (int r = 0; r < world; ++r) {
            tpcommCallInfo_t info{};
            ASSERT_EQ(tpcommCommGetLastCall(g->comms[r], &info), tpcommSuccess);
            EXPECT_EQ(info.variant, row.id)
                << name << " rank " << r << " ran " << tpcommVariantName(info.variant);
          }
          ++ran;
        }
    printf("[ row      ] %s world=%d: %d cases ran, %d refused by name\n", row.name, world, ran,
           refused);
    EXPECT_GT(ran, 0) << "the row took no case of the matrix";
    ++tested;
    if (HasFailure()) return;  // a broken row fails once per world
  }
  EXPECT_GE(tested, 12);
}
INSTANTIATE_TEST_SUITE_P(World, RowWorld, ::testing::Values(2, 4, 8));

// The sentinel is an all-ones NaN: inputs carrying exactly that payload must not look like
// "not arrived" (no hang), and -0.0 must survive (-0 + -0 = -0).
TEST(Correctness, SentinelPayloadAndNegativeZero) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const std::pair<int, int> runs[] = {
      {2, tpcommAlgoOneShot},     {2, tpcommAlgoTwoShot},     {2, tpcommAlgoHostOneShot},
      {2, tpcommAlgoHostTwoShot}, {2, tpcommAlgoHostBulk},    {4, tpcommAlgoIsland},
      {8, tpcommAlgoIsland},      {2, tpcommAlgoOneShotPull}, {2, tpcommAlgoTwoShotPull},
      {2, tpcommAlgoOneShotCe},   {4, tpcommAlgoIslandPull},  {8, tpcommAlgoIslandPull}};
  for (const auto& [world, algo] : runs) {
    SCOPED_TRACE(std::string(tpcommAlgoName(algo)) + " world " + std::to_string(world));
    if (world > maxTestWorld()) {
      printf("[ skipped  ] %s at world %d: TPCOMM_TEST_MAX_WORLD=%d\n", tpcommAlgoName(algo), world,
             maxTestWorld());
      continue;
    }
    const tpcommConfig_t cfg = configFor(algo, world > 2 ? 4 : 0, 3000);
    std::string err;
    auto g = makeGroup(world, &cfg, 1 << 16, &err);
    ASSERT_TRUE(g) << err;
    for (tpcommDataType_t dt : kTypes) {
      const size_t es = elemSize(dt), count = 1000;
      std::vector<uint8_t> nan(count * es, 0xFF), negz(count * es, 0);
      for (size_t i = 0; i < count; ++i) negz[i * es + es - 1] = 0x80;
      for (int r = 0; r < world; ++r) {
        cudaSetDevice(g->devs[r]);
        cudaMemcpy(g->send[r], r == 0 ? nan.data() : negz.data(), count * es,
                   cudaMemcpyHostToDevice);
        cudaMemcpy(g->recv[r], negz.data(), count * es, cudaMemcpyHostToDevice);
      }
      {
        GroupScope group;
        for (int r = 0; r < world; ++r) {
          ASSERT_EQ(tpcommAllReduce(g->send[r], g->send[r], count, dt, tpcommSum, g->comms[r],
                                    g->streams[r]),
                    tpcommSuccess);
          ASSERT_EQ(tpcommAllReduce(g->recv[r], g->recv[r], count, dt, tpcommSum, g->comms[r],
                                    g->streams[r]),
                    tpcommSuccess);
        }
      }
      for (int r = 0; r < world; ++r) {
        ASSERT_TRUE(drained(*g, r)) << "sentinel payload looked like missing data";
        std::vector<uint8_t> a(count * es), b(count * es);
        cudaMemcpy(a.data(), g->send[r], count * es, cudaMemcpyDeviceToHost);
        cudaMemcpy(b.data(), g->recv[r], count * es, cudaMemcpyDeviceToHost);
        for (size_t i = 0; i < count; ++i) {
          EXPECT_TRUE(std::isnan(toDouble(dt, a.data() + i * es))) << dtypeName(dt) << " " << i;
          EXPECT_EQ(b[i * es + es - 1], 0x80) << "-0.0 lost its sign: " << dtypeName(dt);
        }
      }
    }
  }
}

// A rank whose buffers are misaligned runs the general one-shot kernel while its aligned peers
// run the lean one (leanFits, src/plan/planner.cc): the two must agree on slots, entries and
// epochs (push: oneshot; pull: oneshot_pull, whose kernels must also agree on the outbox flags).
// With `knobs` and `variant`: every rank, aligned or not, must have run that variant (the pull
// LL kernel, chosen by size alone). Inputs are small integers, so the sum is exact in bf16 and
// the reference is exact.
void leanAndGeneralTogether(int algo, const char* knobs = nullptr, int variant = -1) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (int world : {2, 3}) {
    tpcommConfig_t cfg = configFor(algo, world > 2 ? 4 : 0, 3000);
    cfg.launchKnobs = knobs;
    std::string err;
    auto g = makeGroup(world, &cfg, 1 << 20, &err);
    ASSERT_TRUE(g) << err;
    const double weight = world * (world + 1) / 2.0;                   // sum over r of (r + 1)
    for (size_t count : {size_t{8}, size_t{1000}, size_t{1} << 15}) {  // 16 B .. 64 KiB
      for (int odd = 0; odd < world; ++odd) {  // the rank with misaligned buffers
        SCOPED_TRACE("world " + std::to_string(world) + ", " + std::to_string(count) +
                     " elements, rank " + std::to_string(odd) + " misaligned");
        // Byte offset of rank r's buffers: one bf16 element for the misaligned rank.
        const auto off = [odd](int r) { return r == odd ? size_t{2} : size_t{0}; };
        std::vector<std::vector<uint16_t>> in(world, std::vector<uint16_t>(count));
        for (int r = 0; r < world; ++r) {
          for (size_t i = 0; i < count; ++i) {
            const float v = static_cast<float>((r + 1) * (static_cast<int>(i % 17) - 8));
            uint32_t bits;
            memcpy(&bits, &v, 4);
            in[r][i] = static_cast<uint16_t>(bits >> 16);  // exact: small integers
          }
          cudaSetDevice(g->devs[r]);
          ASSERT_EQ(
              cudaMemcpy(g->send[r] + off(r), in[r].data(), count * 2, cudaMemcpyHostToDevice),
              cudaSuccess);
        }
        {
          GroupScope group;
          for (int r = 0; r < world; ++r)
            ASSERT_EQ(tpcommAllReduce(g->send[r] + off(r), g->recv[r] + off(r), count,
                                      tpcommBfloat16, tpcommSum, g->comms[r], g->streams[r]),
                      tpcommSuccess);
        }
        for (int r = 0; r < world; ++r) {
          ASSERT_TRUE(drained(*g, r));
          tpcommCallInfo_t info{};
          tpcommCommGetLastCall(g->comms[r], &info);
          // World 3 runs 4 blocks of 512 threads (max_blocks above): a 64 KiB call is then two
          // vectors a thread, which the LL kernel does not take (the planner gives it the
          // general pull kernel on every rank alike).
          const bool one_vector_a_thread = world == 2 || count * 2 <= size_t{4} * 512 * 16;
          if (variant >= 0 && one_vector_a_thread) {
            EXPECT_EQ(info.variant, variant) << "rank " << r << ": " << info.reason;
          }
          std::vector<uint16_t> out(count);
          ASSERT_EQ(cudaMemcpy(out.data(), g->recv[r] + off(r), count * 2, cudaMemcpyDeviceToHost),
                    cudaSuccess);
          size_t wrong = 0;
          for (size_t i = 0; i < count; ++i) {
            const double want = weight * (static_cast<int>(i % 17) - 8);
            wrong += toDouble(tpcommBfloat16, &out[i]) != want;
          }
          EXPECT_EQ(wrong, 0u) << "rank " << r;
        }
      }
    }
  }
}

TEST(Correctness, LeanAndGeneralOneShotTogether) {
  leanAndGeneralTogether(tpcommAlgoOneShot);
}
// The flag kernels (LL off: at these sizes it would serve every rank).
TEST(Correctness, LeanAndGeneralOneShotPullTogether) {
  leanAndGeneralTogether(tpcommAlgoOneShotPull, "pull_ll_bytes=0");
}
// The pull LL kernel at every size here (to 64 KiB): a misaligned rank takes it as its aligned
// peers do, and they pair.
TEST(Correctness, MisalignedRankWithAlignedOnesOneShotPullLL) {
  leanAndGeneralTogether(tpcommAlgoOneShotPull, "pull_ll_bytes=65536",
                         tpcommVariantP2pOneShotPullLL);
}

}  // namespace
}  // namespace tpcomm::test
