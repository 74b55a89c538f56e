// `tpcomm tune`'s decisions (tools/tune/tune_rules.h) on made-up measurements: the pick per size,
// the merge into rules, never slower than NCCL, and how a world's table joins the machine's file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "plan/tuning_table.h"
#include "tools/tune/tune_fused_pick.h"
#include "tools/tune/tune_rules.h"

namespace tpcomm::cli {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;
constexpr int kO = tpcommAlgoOneShot, kT = tpcommAlgoTwoShot, kN = tpcommAlgoNccl;

// samples for world 2: {bytes, {algo, us}...}
std::vector<TuningSample> samples(
    const std::vector<std::pair<size_t, std::vector<std::pair<int, double>>>>& rows,
    int world = 2) {
  std::vector<TuningSample> s;
  for (const auto& [bytes, times] : rows)
    for (const auto& [algo, us] : times) s.push_back({world, bytes, algo, us});
  return s;
}

std::vector<size_t> sizesOf(const std::vector<TuningSample>& s) {
  std::vector<size_t> out;
  for (const TuningSample& x : s)
    if (out.empty() || out.back() != x.bytes) out.push_back(x.bytes);
  return out;
}

TuningTable tableOf(const SizeTable& rules, int world = 2) {
  TuningTable t;
  t.topology_key = "2gpu-0123456789abcdef";
  t.fabric = Fabric::kNvlink;
  t.tables.push_back({world, rules});
  return t;
}

TEST(TuneRules, SweepSizes) {
  const std::vector<size_t> x2 = sweepSizes(KiB, 64 * MiB, 2);
  ASSERT_EQ(x2.size(), 17u);
  EXPECT_EQ(x2.front(), KiB);
  EXPECT_EQ(x2.back(), 64 * MiB);
  const std::vector<size_t> x4 = sweepSizes(KiB, 64 * MiB, 4);
  ASSERT_EQ(x4.size(), 9u);
  EXPECT_EQ(x4[1], 4 * KiB);
  EXPECT_TRUE(sweepSizes(KiB, 64 * MiB, 1).empty());
  EXPECT_TRUE(sweepSizes(0, 64 * MiB, 2).empty());
}

TEST(TuneRules, FastestPerSizeMergesIntoRules) {
  // The 2x H200 shape: one-shot wins small, two-shot large, NCCL never.
  const auto s = samples({{1 * KiB, {{kO, 2.9}, {kT, 5.0}, {kN, 6.2}}},
                          {64 * KiB, {{kO, 3.6}, {kT, 5.5}, {kN, 7.4}}},
                          {1 * MiB, {{kO, 9.0}, {kT, 11.6}, {kN, 14.0}}},
                          {4 * MiB, {{kO, 30.2}, {kT, 20.8}, {kN, 32.3}}},
                          {64 * MiB, {{kO, 300}, {kT, 214.3}, {kN, 244.2}}}});
  const std::vector<SizePick> picks = pickPerSize(s, 2, sizesOf(s), 0.02);
  ASSERT_EQ(picks.size(), 5u);
  EXPECT_EQ(picks[0].algo, kO);
  EXPECT_DOUBLE_EQ(picks[0].us, 2.9);
  EXPECT_DOUBLE_EQ(picks[0].nccl_us, 6.2);
  EXPECT_EQ(picks[3].algo, kT);
  EXPECT_EQ(picks[3].fastest, kT);
  const SizeTable rules = mergeRules(picks);
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].max_bytes, 1 * MiB);
  EXPECT_EQ(rules[0].algo, kO);
  EXPECT_EQ(rules[1].max_bytes, SIZE_MAX);
  EXPECT_EQ(rules[1].algo, kT);
  std::string why;
  EXPECT_TRUE(tableNeverSlowerThanNccl(tableOf(rules), s, 0.0, &why)) << why;
}

TEST(TuneRules, NcclOnlyWhereClearlyFaster) {
  const auto s = samples({{1 * KiB, {{kO, 3.0}, {kN, 6.0}}},
                          {64 * KiB, {{kO, 6.1}, {kN, 6.0}}},   // a tie: tpcomm kept
                          {1 * MiB, {{kO, 20.0}, {kN, 14.0}}},  // NCCL clearly faster
                          {4 * MiB, {{kO, 40.0}, {kN, 32.0}}}});
  const std::vector<SizePick> picks = pickPerSize(s, 2, sizesOf(s), 0.02);
  EXPECT_EQ(picks[1].algo, kO);
  EXPECT_EQ(picks[1].fastest, kN);
  EXPECT_EQ(picks[2].algo, kN);
  const SizeTable rules = mergeRules(picks);
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].max_bytes, 64 * KiB);
  EXPECT_EQ(rules[1].algo, kN);
  std::string why;
  EXPECT_TRUE(tableNeverSlowerThanNccl(tableOf(rules), s, 0.02, &why)) << why;
  // With no tie allowed, the one-shot pick at 64 KiB is (just) slower than NCCL.
  EXPECT_FALSE(tableNeverSlowerThanNccl(tableOf(rules), s, 0.0, &why));
  EXPECT_EQ(mergeRules(pickPerSize(s, 2, sizesOf(s), 0.0))[0].max_bytes, 1 * KiB);
}

TEST(TuneRules, NoiseDoesNotSplitRules) {
  // One-shot and two-shot alternate by less than the tie: the previous pick is kept.
  const auto s = samples({{1 * KiB, {{kO, 3.00}, {kT, 3.50}}},
                          {2 * KiB, {{kO, 3.02}, {kT, 3.00}}},
                          {4 * KiB, {{kO, 3.03}, {kT, 3.04}}},
                          {8 * KiB, {{kO, 4.00}, {kT, 3.10}}}});
  const SizeTable rules = mergeRules(pickPerSize(s, 2, sizesOf(s), 0.02));
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].algo, kO);
  EXPECT_EQ(rules[0].max_bytes, 4 * KiB);
  EXPECT_EQ(rules[1].algo, kT);
  // Without the tie the alternation shows.
  EXPECT_EQ(mergeRules(pickPerSize(s, 2, sizesOf(s), 0.0)).size(), 4u);
}

TEST(TuneRules, UnmeasuredSizesAndOtherWorldsAreSkipped) {
  std::vector<TuningSample> s = samples({{1 * KiB, {{kO, 3.0}}}, {4 * KiB, {{kT, 3.0}}}});
  const std::vector<TuningSample> other = samples({{2 * KiB, {{kN, 1.0}}}}, 4);
  s.insert(s.end(), other.begin(), other.end());
  const std::vector<SizePick> picks = pickPerSize(s, 2, {1 * KiB, 2 * KiB, 4 * KiB}, 0.02);
  EXPECT_EQ(picks[1].algo, -1);  // world 4's sample does not count for world 2
  EXPECT_LT(picks[1].nccl_us, 0);
  const SizeTable rules = mergeRules(picks);
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].max_bytes, 1 * KiB);  // 2 KiB falls to the next rule
  EXPECT_TRUE(mergeRules({}).empty());
  // The fastest of repeated samples counts.
  const std::vector<TuningSample> twice = {{2, KiB, kO, 5.0}, {2, KiB, kO, 4.0}};
  EXPECT_DOUBLE_EQ(timesAt(twice, 2, KiB).at(kO), 4.0);
}

TEST(TuneRules, RandomMeasurementsNeverGiveATableSlowerThanNccl) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> us(1.0, 100.0);
  const std::vector<size_t> sizes = sweepSizes(KiB, 64 * MiB, 2);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<TuningSample> s;
    for (size_t b : sizes)
      for (int a : {kO, kT, static_cast<int>(tpcommAlgoHostOneShot), kN})
        if (rng() % 5) s.push_back({2, b, a, us(rng)});  // some points missing
    const double tie = (rng() % 4) * 0.01;
    const SizeTable rules = mergeRules(pickPerSize(s, 2, sizes, tie));
    if (rules.empty()) continue;
    TuningTable t = tableOf(rules);
    std::string why;
    ASSERT_TRUE(validateTuningTable(t, &why)) << why;
    ASSERT_TRUE(tableNeverSlowerThanNccl(t, s, tie, &why)) << "trial " << trial << ": " << why;
  }
}

TEST(TuneRules, OnlyAlgorithmsTheFabricRunsAreEligible) {
  EXPECT_TRUE(eligibleOn(Fabric::kNvlink, kO));
  EXPECT_TRUE(eligibleOn(Fabric::kPcie, tpcommAlgoIsland));
  EXPECT_FALSE(eligibleOn(Fabric::kNvlink, tpcommAlgoIsland));  // no islands: auto never picks it
  EXPECT_FALSE(eligibleOn(Fabric::kNvlink, tpcommAlgoHostOneShot));
  EXPECT_TRUE(eligibleOn(Fabric::kHost, tpcommAlgoHostTwoShot));
  EXPECT_FALSE(eligibleOn(Fabric::kHost, kT));
  for (Fabric f : {Fabric::kNvlink, Fabric::kPcie, Fabric::kHost}) EXPECT_TRUE(eligibleOn(f, kN));
  // The host path measured faster on an NVLink box is still not picked there.
  const auto s = samples({{1 * KiB, {{kO, 3.0}, {tpcommAlgoHostOneShot, 2.0}, {kN, 6.0}}}});
  const std::vector<SizePick> p = pickPerSize(eligibleSamples(s, Fabric::kNvlink), 2, {KiB}, 0.02);
  EXPECT_EQ(p[0].algo, kO);
  const std::vector<SizePick> h = pickPerSize(eligibleSamples(s, Fabric::kHost), 2, {KiB}, 0.02);
  EXPECT_EQ(h[0].algo, tpcommAlgoHostOneShot);
}

// A table row naming a forced-only algorithm is not obeyed (auto falls back: policy.cc), so tune
// must not write one, however fast it measured: the table's "never slower than NCCL" check would
// then cover an algorithm that never runs.
TEST(TuneRules, ForcedOnlyAlgorithmsAreMeasuredButNeverPicked) {
  for (Fabric f : {Fabric::kNvlink, Fabric::kPcie, Fabric::kHost})
    EXPECT_FALSE(eligibleOn(f, tpcommAlgoOneShotCe)) << fabricName(f);
  const auto s = samples({{1 * KiB, {{kO, 3.0}, {tpcommAlgoOneShotCe, 2.0}, {kN, 6.0}}}});
  for (Fabric f : {Fabric::kNvlink, Fabric::kPcie}) {
    const std::vector<SizePick> p = pickPerSize(eligibleSamples(s, f), 2, {KiB}, 0.02);
    EXPECT_EQ(p[0].algo, kO) << fabricName(f);
  }
}

TEST(TuneRules, MeasuredJsonHasNullsWhereNothingRan) {
  const auto s = samples({{1 * KiB, {{kO, 2.914}, {kN, 6.2}}}, {2 * KiB, {{kN, 6.3}}}});
  const std::vector<size_t> sizes = {1 * KiB, 2 * KiB};
  const json::Value m =
      measuredWorldJson(s, 2, sizes, {kO, kN}, pickPerSize(s, 2, sizes, 0.02), "bf16");
  EXPECT_EQ(m.find("dtype")->asString(), "bf16");
  const json::Value& o = *m.find("us")->find("oneshot");
  ASSERT_EQ(o.items().size(), 2u);
  EXPECT_DOUBLE_EQ(o.items()[0].asDouble(), 2.91);
  EXPECT_TRUE(o.items()[1].isNull());
  EXPECT_EQ(m.find("picked")->items()[1].asString(), "nccl");
}

TEST(TuneRules, MergeTableKeepsOtherWorldsOfTheSameMachineAndFabric) {
  const std::string key = "8gpu-0123456789abcdef";
  TuningTable previous;
  previous.topology_key = key;
  previous.fabric = Fabric::kPcie;
  previous.tables = {{2, {{SIZE_MAX, kO}}}, {8, {{SIZE_MAX, kT}}}};
  previous.measured = json::Value::object();
  json::Value worlds = json::Value::array();
  for (int w : {2, 8}) {
    json::Value m = json::Value::object();
    m.set("world", json::Value::integer(w));
    worlds.push(std::move(m));
  }
  previous.measured.set("worlds", std::move(worlds));

  json::Value m4 = json::Value::object();
  m4.set("world", json::Value::integer(4));
  TuningTable t =
      mergeTable(&previous, key, Fabric::kPcie, {4, {{64 * KiB, kO}, {SIZE_MAX, kN}}, 0}, m4);
  ASSERT_EQ(t.tables.size(), 3u);
  EXPECT_EQ(t.tables[0].world, 2);
  EXPECT_EQ(t.tables[1].world, 4);
  EXPECT_EQ(t.tables[2].world, 8);
  EXPECT_EQ(t.measured.find("worlds")->items().size(), 3u);
  std::string why;
  ASSERT_TRUE(validateTuningTable(t, &why)) << why;
  TuningTable back;
  ASSERT_TRUE(parseTuningTable(tuningTableText(t), key, &back, &why)) << why;
  EXPECT_EQ(back.tables.size(), 3u);

  // Re-tuning world 8 replaces it.
  t = mergeTable(&previous, key, Fabric::kPcie, {8, {{SIZE_MAX, kN}}, 0}, json::Value::object());
  ASSERT_EQ(t.tables.size(), 2u);
  EXPECT_EQ(t.tables[1].rules[0].algo, kN);
  EXPECT_EQ(t.measured.find("worlds")->items().size(), 2u);

  // Another fabric (e.g. TPCOMM_TRANSPORT=host) or another machine: start over.
  t = mergeTable(&previous, key, Fabric::kHost, {4, {{SIZE_MAX, tpcommAlgoHostTwoShot}}, 0},
                 json::Value::object());
  EXPECT_EQ(t.tables.size(), 1u);
  t = mergeTable(&previous, "8gpu-ffffffffffffffff", Fabric::kPcie, {4, {{SIZE_MAX, kO}}, 0},
                 json::Value::object());
  EXPECT_EQ(t.tables.size(), 1u);
  t = mergeTable(nullptr, key, Fabric::kPcie, {4, {{SIZE_MAX, kO}}, 0}, json::Value::object());
  EXPECT_EQ(t.tables.size(), 1u);
  EXPECT_EQ(t.measured.find("tool")->asString(), "tpcomm tune");
}

}  // namespace
}  // namespace tpcomm::cli

namespace tpcomm::cli {
namespace {

// Every algorithm of the library is a candidate, whatever was added since (the pull and
// copy-engine variants: tpcommAlgo_t 8..10), NCCL last, Auto never.
TEST(TuneRules, CandidatesAreEveryAlgorithmThenNccl) {
  const std::vector<int> c = candidatesFor(11);
  ASSERT_EQ(c.size(), 10u);
  EXPECT_EQ(c.back(), tpcommAlgoNccl);
  for (int a = 1; a < 11; ++a) EXPECT_EQ(std::count(c.begin(), c.end(), a), 1) << a;
  EXPECT_EQ(std::count(c.begin(), c.end(), tpcommAlgoAuto), 0);
  EXPECT_EQ(candidatesFor(tpcommNumAlgos).size(), static_cast<size_t>(tpcommNumAlgos - 1));
}

// A collapsing fabric as published (8 ranks): pushes at 2.7 GB/s lose everywhere, the pulls win
// the small and middle sizes, NCCL the large ones; the table is never slower than NCCL.
TEST(TuneRules, OnACollapsingFabricThePullsWinAndNcclKeepsTheLargeSizes) {
  constexpr int kOP = tpcommAlgoOneShotPull, kTP = tpcommAlgoTwoShotPull;
  EXPECT_TRUE(eligibleOn(Fabric::kPcie, kOP));
  EXPECT_FALSE(eligibleOn(Fabric::kHost, kTP));
  const auto s =
      samples({{14 * KiB, {{kO, 41.0}, {kT, 44.0}, {kOP, 8.1}, {kTP, 12.0}, {kN, 24.0}}},
               {256 * KiB, {{kO, 700.0}, {kT, 150.0}, {kOP, 70.0}, {kTP, 30.0}, {kN, 40.0}}},
               {16 * MiB, {{kO, 9e4}, {kT, 9e3}, {kOP, 4e3}, {kTP, 1200.0}, {kN, 900.0}}}},
              8);
  const std::vector<SizePick> picks = pickPerSize(s, 8, sizesOf(s), 0.02);
  const SizeTable rules = mergeRules(picks);
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0].algo, kOP);
  EXPECT_EQ(rules[1].algo, kTP);
  EXPECT_EQ(rules[2].algo, kN);
  std::string why;
  TuningTable t = tableOf(rules, 8);
  t.fabric = Fabric::kPcie;
  EXPECT_TRUE(tableNeverSlowerThanNccl(t, s, 0.05, &why)) << why;
}

// The fused crossover: the smallest row count from which the two-shot wins by more than the tie
// at every measured count; a tie, or a loss at the largest count, keeps the one-shot; counts
// where either form did not run (beyond a step the "one-shot" is the unfused pair) are skipped.
TEST(TuneRules, FusedTwoShotRowsIsWhereTheTwoShotWinsForGood) {
  const auto pt = [](size_t rows, double one, double two) {
    FusedPoint p;
    p.rows = rows;
    p.oneshot_us = one;
    p.twoshot_us = two;
    return p;
  };
  EXPECT_EQ(fusedTwoShotRows({pt(1, 3, 5), pt(16, 8, 9), pt(64, 20, 15), pt(256, 60, 40)}, 0.02),
            64u);
  // A win below a loss does not count: only wins that hold up to the largest count.
  EXPECT_EQ(fusedTwoShotRows({pt(1, 3, 2), pt(16, 8, 9), pt(64, 20, 15)}, 0.02), 64u);
  EXPECT_EQ(fusedTwoShotRows({pt(1, 3, 2), pt(16, 8, 7)}, 0.02), 1u);
  // Within the tie the one-shot holds: "inf".
  EXPECT_EQ(fusedTwoShotRows({pt(1, 3, 5), pt(64, 20, 19.9)}, 0.02), SIZE_MAX);
  EXPECT_EQ(fusedTwoShotRows({pt(1, 3, 5), pt(64, 20, 30)}, 0.02), SIZE_MAX);
  // Beyond a step (no one-shot) and unmeasured counts are skipped.
  EXPECT_EQ(fusedTwoShotRows({pt(1, 3, 5), pt(64, 20, 15), pt(1024, -1, 300)}, 0.02), 64u);
  EXPECT_EQ(fusedTwoShotRows({pt(1, -1, 5), pt(64, 20, -1)}, 0.02), 0u);
  EXPECT_EQ(fusedTwoShotRows({}, 0.02), 0u);

  std::vector<FusedPoint> pts = {pt(1, 3.004, 5), pt(64, 20, -1)};
  pts[0].pair_us = 6;
  pts[0].oneshot_variant = "fused_p2p_oneshot_pull";
  const json::Value j = fusedMeasuredJson(pts, 7168, SIZE_MAX);
  EXPECT_EQ(j.find("twoshot_rows")->asString(), "inf");
  EXPECT_TRUE(j.find("us")->find("twoshot")->items()[1].isNull());
  EXPECT_EQ(j.find("variants")->find("oneshot")->items()[0].asString(), "fused_p2p_oneshot_pull");
  EXPECT_TRUE(fusedMeasuredJson(pts, 7168, 0).find("twoshot_rows")->isNull());
}

// Below which row count the pair runs: where the fused form the planner takes (the one-shot
// below the two-shot's crossover, the two-shot from it, and beyond the one-shot's step) loses to
// the pair by more than the tie, and only below a count from which the fused call holds for good.
TEST(TuneRules, FusedUnfusedBelowIsWhereThePairWins) {
  const auto pt = [](size_t rows, double one, double two, double pair) {
    FusedPoint p;
    p.rows = rows;
    p.oneshot_us = one;
    p.twoshot_us = two;
    p.pair_us = pair;
    return p;
  };
  // World 8 sharing one GPU (docs/BENCHMARKS.md, twenty-second round): the pair at 1-2 rows.
  const std::vector<FusedPoint> w8 = {pt(1, 10.18, 14.06, 9.07), pt(2, 10.17, 15.0, 9.49),
                                      pt(4, 10.27, 19.28, 10.70), pt(64, 78.13, 27.96, 45.81),
                                      pt(1024, -1, 410.5, 475.15)};
  EXPECT_EQ(fusedUnfusedBelow(w8, 64, 0.02), 4u);
  // Without the crossover the one-shot's 78 us at 64 rows loses: the pair from there down.
  EXPECT_EQ(fusedUnfusedBelow(w8, 0, 0.02), 1024u);
  // The fused call everywhere: none; within the tie it holds.
  EXPECT_EQ(fusedUnfusedBelow({pt(1, 3.8, 7, 5.8), pt(64, 8.2, 8.9, 14.4)}, 0, 0.02), 0u);
  EXPECT_EQ(fusedUnfusedBelow({pt(1, 5.9, 7, 5.8), pt(64, 8.2, 8.9, 14.4)}, 0, 0.02), 0u);
  // The pair at the largest count: never fused.
  EXPECT_EQ(fusedUnfusedBelow({pt(1, 3, 7, 5), pt(64, 30, 31, 20)}, 0, 0.02), SIZE_MAX);
  // Unmeasured pairs and forms are skipped; nothing to compare: none.
  EXPECT_EQ(fusedUnfusedBelow({pt(1, 9, 9, -1), pt(4, -1, -1, 3)}, 0, 0.02), 0u);
  EXPECT_EQ(fusedUnfusedBelow({}, 0, 0.02), 0u);
  const json::Value j = fusedMeasuredJson(w8, 7168, 64, 4);
  uint64_t below = 0;
  ASSERT_TRUE(j.find("unfused_below")->getUint64(&below));
  EXPECT_EQ(below, 4u);
}

// A world re-tuned keeps its fused crossover in the file written, and the other worlds keep
// theirs.
TEST(TuneRules, MergeTableKeepsTheFusedCrossover) {
  const std::string key = "4gpu-0123456789abcdef";
  TuningTable previous;
  previous.topology_key = key;
  previous.fabric = Fabric::kPcie;
  previous.tables = {{2, {{SIZE_MAX, tpcommAlgoOneShot}}, 128}};
  const TuningTable t =
      mergeTable(&previous, key, Fabric::kPcie, {4, {{SIZE_MAX, tpcommAlgoOneShot}}, SIZE_MAX},
                 json::Value::object());
  TuningTable back;
  std::string why;
  ASSERT_TRUE(parseTuningTable(tuningTableText(t), key, &back, &why)) << why;
  ASSERT_EQ(back.tables.size(), 2u);
  EXPECT_EQ(back.worldFor(2, Fabric::kPcie)->fused_twoshot_rows, 128u);
  EXPECT_EQ(back.worldFor(4, Fabric::kPcie)->fused_twoshot_rows, SIZE_MAX);
}

}  // namespace
}  // namespace tpcomm::cli
