// `tpcomm tune`'s decisions for the quantized wire (tools/tune/tune_wire_pick.h) on made-up
// measurements: the form it measures on each fabric, from which size a codec beats full precision
// (wire_from), and its "measured" record; and the result check of a lossy wire
// (tools/tune/tune_wire_check.h) against the host emulation of the kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/host_data.h"
#include "tests/support/wire_reference.h"
#include "tools/tune/tune_rules.h"
#include "tools/tune/tune_wire_check.h"
#include "tools/tune/tune_wire_pick.h"

namespace tpcomm::cli {
namespace {

constexpr size_t MiB = 1024 * 1024;

// Points at 1, 2, 4, ... MiB: the codec's time and the best full-precision time at each.
std::vector<WirePoint> points(const std::vector<std::pair<double, double>>& wire_full) {
  std::vector<WirePoint> p;
  size_t bytes = MiB;
  for (const auto& [wire, full] : wire_full) {
    p.push_back({bytes, wire, full});
    bytes *= 2;
  }
  return p;
}

TEST(TuneWire, TheFormIsTheOneThePlannerTakes) {
  std::string why;
  EXPECT_EQ(wireForm(Fabric::kHost, FabricVerdict::kNoP2p, false, &why), tpcommAlgoHostTwoShot);
  EXPECT_EQ(wireForm(Fabric::kPcie, FabricVerdict::kWriteCollapse, false, &why),
            tpcommAlgoTwoShotPull);
  EXPECT_EQ(wireForm(Fabric::kPcie, FabricVerdict::kUnknown, false, &why), tpcommAlgoTwoShot);
  EXPECT_EQ(wireForm(Fabric::kPcie, FabricVerdict::kPushFine, true, &why), tpcommAlgoTwoShot);
  EXPECT_TRUE(why.empty()) << why;
  EXPECT_EQ(wireForm(Fabric::kNvlink, FabricVerdict::kUnknown, false, &why), tpcommAlgoAuto);
  EXPECT_NE(why.find("over NVLink the quantized wire never runs by itself"), std::string::npos)
      << why;
  why.clear();
  // --share-gpu (tune tested on one GPU): the push form, so that the path runs.
  EXPECT_EQ(wireForm(Fabric::kNvlink, FabricVerdict::kUnknown, true, &why), tpcommAlgoTwoShot);
  EXPECT_TRUE(why.empty()) << why;
}

TEST(TuneWire, FasterEverywhereIsFromTheSmallestSize) {
  EXPECT_EQ(wireFrom(points({{50, 100}, {80, 200}, {150, 400}, {300, 800}}), 0.02), 1 * MiB);
}

TEST(TuneWire, NeverFasterIsInf) {
  EXPECT_EQ(wireFrom(points({{150, 100}, {250, 200}, {450, 400}, {900, 800}}), 0.02), SIZE_MAX);
  // Faster at small sizes but not at the largest: no size from which it holds.
  EXPECT_EQ(wireFrom(points({{50, 100}, {100, 200}, {200, 400}, {900, 800}}), 0.02), SIZE_MAX);
}

TEST(TuneWire, ACrossoverIsWhereItWinsForGood) {
  // Slower below 4 MiB (the encoding's cost), faster from there on.
  EXPECT_EQ(wireFrom(points({{150, 100}, {220, 200}, {300, 400}, {500, 800}, {900, 1600}}), 0.02),
            4 * MiB);
}

TEST(TuneWire, ATieKeepsFullPrecision) {
  // 1 % faster at 8 MiB and up: within a 2 % tie, so not taken; with no tie, taken from there.
  const auto p = points({{150, 100}, {220, 200}, {500, 400}, {792, 800}, {1584, 1600}});
  EXPECT_EQ(wireFrom(p, 0.02), SIZE_MAX);
  EXPECT_EQ(wireFrom(p, 0.0), 8 * MiB);
  // Exactly equal never counts as faster, even without a tie.
  EXPECT_EQ(wireFrom(points({{100, 100}, {200, 200}}), 0.0), SIZE_MAX);
  // The tie is a fraction of the codec's time: 5 % faster passes a 2 % tie, not a 6 % one.
  const auto q = points({{95, 100}, {190, 200}});
  EXPECT_EQ(wireFrom(q, 0.02), 1 * MiB);
  EXPECT_EQ(wireFrom(q, 0.06), SIZE_MAX);
}

TEST(TuneWire, NoiseBelowTheCrossoverDoesNotMoveIt) {
  // Faster at 1 MiB, slower at 2 MiB (noise), faster from 4 MiB on: from 4 MiB, not 1.
  EXPECT_EQ(wireFrom(points({{50, 100}, {250, 200}, {300, 400}, {500, 800}}), 0.02), 4 * MiB);
  // Unsorted points are taken by size.
  std::vector<WirePoint> p = points({{50, 100}, {250, 200}, {300, 400}, {500, 800}});
  std::swap(p[0], p[3]);
  EXPECT_EQ(wireFrom(p, 0.02), 4 * MiB);
}

TEST(TuneWire, MissingTimesAreSkippedAndNoPointIsNotMeasured) {
  EXPECT_EQ(wireFrom({}, 0.02), 0u);
  EXPECT_EQ(wireFrom(points({{-1, 100}, {200, -1}}), 0.02), 0u);
  // A size the codec did not run at (-1) neither breaks nor starts the run of wins.
  EXPECT_EQ(wireFrom(points({{150, 100}, {100, 200}, {-1, 400}, {500, 800}}), 0.02), 2 * MiB);
  // Nor does one where no full-precision candidate was measured.
  EXPECT_EQ(wireFrom(points({{150, 100}, {100, 200}, {300, -1}, {500, 800}}), 0.02), 2 * MiB);
}

TEST(TuneWire, PointsTakeTheBestEligibleFullPrecision) {
  const int world = 4;
  const std::vector<TuningSample> all = {
      {world, 1 * MiB, tpcommAlgoTwoShot, 300},  {world, 1 * MiB, tpcommAlgoNccl, 250},
      {world, 1 * MiB, tpcommAlgoHostBulk, 100},  // not on PCIe: not eligible
      {world, 2 * MiB, tpcommAlgoTwoShot, 400},  {world, 2 * MiB, tpcommAlgoTwoShot, 380},
      {8, 2 * MiB, tpcommAlgoTwoShot, 10},  // another world
  };
  const std::vector<TuningSample> eligible = eligibleSamples(all, Fabric::kPcie);
  const FullPrecision one = bestFullPrecision(eligible, world, 1 * MiB);
  EXPECT_EQ(one.algo, tpcommAlgoNccl);
  EXPECT_EQ(one.us, 250);
  EXPECT_EQ(bestFullPrecision(eligible, world, 2 * MiB).us, 380);
  EXPECT_EQ(bestFullPrecision(eligible, world, 4 * MiB).algo, -1);
  const std::vector<WirePoint> p =
      wirePoints({1 * MiB, 2 * MiB, 4 * MiB}, {200, 390, 100}, eligible, world);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].full_us, 250);
  EXPECT_EQ(p[1].full_us, 380);
  EXPECT_LT(p[2].full_us, 0);
  EXPECT_EQ(wireFrom(p, 0.02), SIZE_MAX);  // slower at 2 MiB, the largest compared
}

TEST(TuneWire, MeasuredJson) {
  const int world = 2;
  const std::vector<TuningSample> eligible = {{world, 1 * MiB, tpcommAlgoNccl, 250.004},
                                              {world, 4 * MiB, tpcommAlgoTwoShotPull, 700}};
  const std::vector<WireRun> runs = {{1, {120.456, -1}, {"p2p_twoshot_pull_int8", ""}},
                                     {2, {-1, 300}, {"", "p2p_twoshot_pull_int4"}}};
  size_t from[kWireCodecs] = {0, 1 * MiB, SIZE_MAX, 0, 0};
  const json::Value o =
      wireMeasuredJson(tpcommAlgoTwoShotPull, {1 * MiB, 4 * MiB}, runs, eligible, world, from);
  EXPECT_EQ(json::write(o),
            "{\n"
            "  \"form\": \"twoshot_pull\",\n"
            "  \"sizes\": [1048576, 4194304],\n"
            "  \"full_precision\": {\"algo\": [\"nccl\", \"twoshot_pull\"], \"us\": [250.0, "
            "700.0]},\n"
            "  \"us\": {\"int8\": [120.46, null], \"int4\": [null, 300.0]},\n"
            "  \"variants\": {\"int8\": [\"p2p_twoshot_pull_int8\", null], \"int4\": [null, "
            "\"p2p_twoshot_pull_int4\"]},\n"
            "  \"wire_from\": {\"int8\": 1048576, \"int4\": \"inf\"}\n"
            "}\n");
}

// A world's wire_from joins the machine's file as its other fields do: the other worlds' stay, the
// new world's replaces its old entry whole (measured without the wire: none).
TEST(TuneWire, MergeTableKeepsTheWireFrom) {
  const std::string key = "4gpu-0123456789abcdef";
  TuningTable previous;
  previous.topology_key = key;
  previous.fabric = Fabric::kPcie;
  WorldTable two, four;
  two.world = 2;
  two.rules = {{SIZE_MAX, tpcommAlgoTwoShot}};
  two.wire_from[1] = 4 * MiB;
  four.world = 4;
  four.rules = {{SIZE_MAX, tpcommAlgoTwoShot}};
  four.wire_from[2] = SIZE_MAX;
  previous.tables = {two, four};
  WorldTable fresh = four;
  fresh.wire_from[2] = 0;
  fresh.wire_from[3] = 2 * MiB;
  const TuningTable t = mergeTable(&previous, key, Fabric::kPcie, fresh, json::Value::object());
  TuningTable back;
  std::string why;
  ASSERT_TRUE(parseTuningTable(tuningTableText(t), key, &back, &why)) << why;
  ASSERT_EQ(back.tables.size(), 2u);
  EXPECT_EQ(back.worldFor(2, Fabric::kPcie)->wire_from[1], 4 * MiB);
  EXPECT_EQ(back.worldFor(4, Fabric::kPcie)->wire_from[2], 0u);
  EXPECT_EQ(back.worldFor(4, Fabric::kPcie)->wire_from[3], 2 * MiB);
}

// The result check on what the kernels give (the host emulation, bit for bit the GPU's): every
// codec, form, datatype and world passes; a garbage output of the same call fails.
TEST(TuneWire, TheCheckPassesTheKernelsOutputAndFailsGarbage) {
  const size_t count = 3 * 4096 + 77;  // not whole groups
  for (tpcommDataType_t dt : {tpcommBfloat16, tpcommFloat16, tpcommFloat32})
    for (int world : {2, 3, 8})
      for (int codec = 1; codec <= 4; ++codec)
        for (test::WireForm form : {test::WireForm::kPull, test::WireForm::kPush}) {
          const WireCodec c = static_cast<WireCodec>(codec);
          const std::string what = std::string(test::dtypeName(dt)) + " world " +
                                   std::to_string(world) + " codec " + std::to_string(codec);
          std::vector<std::vector<uint8_t>> in;
          for (int r = 0; r < world; ++r) in.push_back(test::makeInput(dt, count, 1234, r));
          const std::vector<float> f =
              test::emulateWire(c, dt, count, world, size_t{1} << 20, in, nullptr, form);
          const size_t es = test::elemSize(dt);
          std::vector<uint8_t> got(count * es);
          for (size_t i = 0; i < count; ++i) test::fromDouble(dt, f[i], got.data() + i * es);
          size_t first = 0;
          EXPECT_EQ(wireWrongElements(c, dt, count, got.data(), in, &first), 0u)
              << what << " at " << first;
          // The exact sum passes too (the bound is around it).
          const std::vector<uint8_t> exact = test::reference(dt, count, in);
          EXPECT_EQ(wireWrongElements(c, dt, count, exact.data(), in), 0u) << what;

          std::vector<uint8_t> bad(got.size(), 0xFF);  // never written: NaN
          EXPECT_EQ(wireWrongElements(c, dt, count, bad.data(), in), count) << what;
          std::fill(bad.begin(), bad.end(), 0);  // zeros
          EXPECT_GT(wireWrongElements(c, dt, count, bad.data(), in), count / 4) << what;
          // Another call's data: the sum of other inputs.
          std::vector<std::vector<uint8_t>> other;
          for (int r = 0; r < world; ++r) other.push_back(test::makeInput(dt, count, 99, r));
          const std::vector<uint8_t> elsewhere = test::reference(dt, count, other);
          EXPECT_GT(wireWrongElements(c, dt, count, elsewhere.data(), in), count / 4) << what;
          // A wrong scale (the output doubled), and one element off by a lot.
          for (size_t i = 0; i < count; ++i) test::fromDouble(dt, 2.0 * f[i], bad.data() + i * es);
          EXPECT_GT(wireWrongElements(c, dt, count, bad.data(), in), count / 4) << what;
          bad = got;
          test::fromDouble(dt, f[4097] + 4.0 * world, bad.data() + 4097 * es);
          EXPECT_EQ(wireWrongElements(c, dt, count, bad.data(), in, &first), 1u) << what;
          EXPECT_EQ(first, 4097u) << what;
        }
}

}  // namespace
}  // namespace tpcomm::cli
