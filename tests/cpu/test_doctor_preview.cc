// `tpcomm doctor`'s policy preview (tools/doctor/doctor_preview.h) on the topology fixtures: the
// fabric of each world, the table that steers it (built-in defaults or a tuning table) and the plan
// the library's planner makes at each size (algorithm, variant, reason).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "plan/tuning_table.h"
#include "tests/cpu/support/topo_fixture.h"
#include "tools/doctor/doctor_preview.h"

namespace tpcomm::cli {
namespace {

TEST(DoctorPreview, SizesAreOneKibToSixtyFourMibInFourfoldSteps) {
  const std::vector<size_t> s = previewSizes();
  ASSERT_EQ(s.size(), 9u);
  EXPECT_EQ(s.front(), 1024u);
  EXPECT_EQ(s.back(), size_t{64} << 20);
  for (size_t i = 1; i < s.size(); ++i) EXPECT_EQ(s[i], s[i - 1] * 4);
}

// The preview names the variant each call runs, as a communicator with the default slots does.
TEST(DoctorPreview, NamesTheVariantThePlannerChooses) {
  PreviewOptions o;
  o.nccl_available = true;
  for (const PreviewWorld& w : previewHypothetical(o)) {
    if (w.world != 2) continue;
    const tpcommVariant_t small = w.rows.front().variant;  // 1 KiB
    const tpcommVariant_t large = w.rows.back().variant;   // 64 MiB
    if (w.fabric == Fabric::kHost) {
      EXPECT_EQ(small, tpcommVariantHostOneShotSentinelLean);
      EXPECT_EQ(large, tpcommVariantHostBulk);
    } else {
      EXPECT_EQ(small, tpcommVariantP2pOneShotLean) << fabricName(w.fabric);
      EXPECT_EQ(large,
                w.fabric == Fabric::kNvlink ? tpcommVariantP2pOneShot : tpcommVariantP2pTwoShot);
    }
  }
}

TEST(DoctorPreview, H200PairFollowsTheDefaultTable) {
  const topo::Topology t = test::topoFixture("h200_2x_nvlink");
  PreviewOptions o;
  o.nccl_available = true;
  const std::vector<PreviewWorld> ws = previewMachine(t, o);
  ASSERT_EQ(ws.size(), 1u);
  const PreviewWorld& w = ws[0];
  EXPECT_EQ(w.world, 2);
  EXPECT_EQ(w.gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(w.fabric, Fabric::kNvlink);
  EXPECT_FALSE(w.tuned);
  EXPECT_EQ(w.table, "built-in defaults");
  ASSERT_EQ(w.rows.size(), previewSizes().size());
  for (const PreviewRow& r : w.rows) {
    EXPECT_EQ(r.decision.error, tpcommSuccess) << r.decision.reason;
    EXPECT_EQ(r.decision.algo, tableAlgoFor(defaultTable(Fabric::kNvlink, 2), r.bytes));
    EXPECT_TRUE(test::contains(r.decision.reason, "default table for nvlink, world 2"))
        << r.decision.reason;
    EXPECT_FALSE(r.decision.fallback);
  }
  EXPECT_EQ(previewFailures(ws, nullptr), 0);
}

TEST(DoctorPreview, EightGpuPcieBoxHasSevenWorldsAndIslandsAtEight) {
  const topo::Topology t = test::topoFixture("rtx_pro_6000_8x_pcie_2socket");
  const std::vector<PreviewWorld> ws = previewMachine(t, PreviewOptions());
  ASSERT_EQ(ws.size(), 7u);
  for (size_t i = 0; i < ws.size(); ++i) {
    EXPECT_EQ(ws[i].world, static_cast<int>(i) + 2);
    EXPECT_EQ(ws[i].fabric, Fabric::kPcie);
    EXPECT_EQ(ws[i].gpus.size(), i + 2);
    for (const PreviewRow& r : ws[i].rows)
      EXPECT_EQ(r.decision.algo,
                tableAlgoFor(defaultTable(Fabric::kPcie, ws[i].world, ws[i].two_islands), r.bytes));
  }
  EXPECT_FALSE(ws[2].two_islands);  // GPUs 0-3: one switch
  EXPECT_TRUE(ws[6].two_islands);   // GPUs 0-7: two sockets
  EXPECT_TRUE(test::contains(ws[6].fabric_reason, "two islands")) << ws[6].fabric_reason;
  // At 8 ranks over two sockets the large calls go to the island algorithm (auto selection on).
  EXPECT_EQ(ws[6].rows.back().decision.algo, tpcommAlgoIsland) << ws[6].rows.back().decision.reason;
}

TEST(DoctorPreview, NoP2pWithoutHostTransportCannotServeAnything) {
  const topo::Topology t = test::topoFixture("rtx_4090_4x_no_p2p");
  PreviewOptions o;
  o.host_transport = false;
  const std::vector<PreviewWorld> ws = previewMachine(t, o);
  ASSERT_EQ(ws.size(), 3u);
  for (const PreviewWorld& w : ws) {
    EXPECT_EQ(w.fabric, Fabric::kHost);
    for (const PreviewRow& r : w.rows) EXPECT_EQ(r.decision.error, tpcommUnsupported);
  }
  std::string first;
  EXPECT_EQ(previewFailures(ws, &first), 27);
  EXPECT_TRUE(test::contains(first, "world 2: ")) << first;
  EXPECT_TRUE(test::contains(first, "host-memory transport")) << first;

  o.host_transport = true;  // the library sets it up for these GPUs: the default host table
  for (const PreviewWorld& w : previewMachine(t, o))
    for (const PreviewRow& r : w.rows) {
      EXPECT_EQ(r.decision.error, tpcommSuccess) << r.decision.reason;
      EXPECT_TRUE(isHostAlgo(r.decision.algo)) << r.decision.reason;
    }
}

TuningTable tableFor(const topo::Topology& t, Fabric f, SizeTable rules) {
  TuningTable table;
  table.topology_key = t.key();
  table.fabric = f;
  table.tables.push_back({2, std::move(rules)});
  std::string why;
  EXPECT_TRUE(validateTuningTable(table, &why)) << why;
  return table;
}

TEST(DoctorPreview, TuningTableSteersItsWorldAndFabricOnly) {
  const topo::Topology t = test::topoFixture("h200_2x_nvlink");
  const TuningTable table =
      tableFor(t, Fabric::kNvlink, {{4096, tpcommAlgoTwoShot}, {SIZE_MAX, tpcommAlgoNccl}});
  PreviewOptions o;
  o.tuning = &table;
  o.nccl_available = true;
  PreviewWorld w = previewWorld(t, {0, 1}, o);
  EXPECT_TRUE(w.tuned);
  EXPECT_EQ(w.table, "tuning table");
  EXPECT_EQ(w.rows[0].decision.algo, tpcommAlgoTwoShot);  // 1 KiB
  EXPECT_EQ(w.rows[1].decision.algo, tpcommAlgoTwoShot);  // 4 KiB
  EXPECT_EQ(w.rows[2].decision.algo, tpcommAlgoNccl);     // 16 KiB
  EXPECT_TRUE(w.rows[2].decision.fallback);
  EXPECT_TRUE(test::contains(w.rows[2].decision.reason, "tuning table"))
      << w.rows[2].decision.reason;

  // Without NCCL the policy serves NCCL's sizes with its bandwidth algorithm, and says so.
  o.nccl_available = false;
  w = previewWorld(t, {0, 1}, o);
  EXPECT_EQ(w.rows[2].decision.algo, tpcommAlgoTwoShot);
  EXPECT_TRUE(test::contains(w.rows[2].decision.reason, "NCCL measured faster"))
      << w.rows[2].decision.reason;

  // Strict mode refuses the fallback.
  o.nccl_available = true;
  o.strict = true;
  w = previewWorld(t, {0, 1}, o);
  EXPECT_EQ(w.rows[2].decision.error, tpcommFallbackRefused);
  EXPECT_GT(previewFailures({w}, nullptr), 0);

  // Measured on another fabric: not used, and the table text says why.
  const TuningTable host = tableFor(t, Fabric::kHost, {{SIZE_MAX, tpcommAlgoHostTwoShot}});
  o.strict = false;
  o.tuning = &host;
  w = previewWorld(t, {0, 1}, o);
  EXPECT_FALSE(w.tuned);
  EXPECT_TRUE(test::contains(w.table, "measured on host")) << w.table;
  EXPECT_EQ(w.rows[0].decision.algo, tableAlgoFor(defaultTable(Fabric::kNvlink, 2), 1024));
}

// The table's fused crossover (tpcomm tune) steers the preview's fused calls, and the table text
// says it: the two-shot from 16 rows at two ranks (the default: 128).
TEST(DoctorPreview, TuningTablesFusedCrossoverSteersTheFusedPreview) {
  const topo::Topology t = test::topoFixture("h200_2x_nvlink");
  TuningTable table = tableFor(t, Fabric::kNvlink, {{SIZE_MAX, tpcommAlgoOneShot}});
  PreviewOptions o;
  o.nccl_available = true;
  const PreviewWorld plain = previewWorld(t, {0, 1}, o);
  table.tables[0].fused_twoshot_rows = 16;
  o.tuning = &table;
  const PreviewWorld w = previewWorld(t, {0, 1}, o);
  EXPECT_EQ(w.table, "tuning table (fused calls: the two-shot from 16 rows, measured)");
  ASSERT_EQ(w.fused.size(), plain.fused.size());
  bool changed = false;
  for (size_t i = 0; i < w.fused.size(); ++i) {
    const bool two = w.fused[i].variant == tpcommVariantFusedP2pTwoShotPull;
    if (w.fused[i].tokens >= 16 && w.fused[i].tokens < 128) {
      EXPECT_TRUE(two) << w.fused[i].tokens << ": " << w.fused[i].reason;
      changed = changed || plain.fused[i].variant != w.fused[i].variant;
    }
    if (w.fused[i].tokens < 16) {
      EXPECT_FALSE(two) << w.fused[i].reason;
    }
  }
  EXPECT_TRUE(changed) << "the default already took the two-shot at 16..127 rows";
  table.tables[0].fused_twoshot_rows = SIZE_MAX;
  EXPECT_TRUE(test::contains(previewWorld(t, {0, 1}, o).table, "the one-shot within a step"));
  table.tables[0].fused_unfused_below = 4;
  const PreviewWorld u = previewWorld(t, {0, 1}, o);
  EXPECT_EQ(u.table,
            "tuning table (fused calls: unfused below 4 rows, the one-shot within a step, "
            "measured)");
  ASSERT_FALSE(u.fused.empty());
  EXPECT_EQ(u.fused[0].tokens, 1u);
  EXPECT_EQ(u.fused[0].variant, tpcommVariantAddRmsNorm) << u.fused[0].reason;
  // The wire's crossovers, where tune measured them (codec order; not measured: not named).
  table.tables[0].wire_from[1] = 4194304;
  table.tables[0].wire_from[2] = SIZE_MAX;
  EXPECT_TRUE(test::contains(previewWorld(t, {0, 1}, o).table,
                             "measured) (the wire: int8 from 4194304 bytes, int4 never, measured)"))
      << previewWorld(t, {0, 1}, o).table;
}

TEST(DoctorPreview, HostAlgorithmsOnP2pOnlyWhenForced) {
  const topo::Topology t = test::topoFixture("h200_2x_nvlink");
  PreviewOptions o;
  o.forced_algo = tpcommAlgoHostOneShot;  // a communicator then sets up the host transport
  for (const PreviewRow& r : previewWorld(t, {0, 1}, o).rows)
    EXPECT_EQ(r.decision.algo, tpcommAlgoHostOneShot) << r.decision.reason;
  // A tuning table naming a host algorithm on NVLink: an auto communicator has no host
  // transport there, so the policy serves those sizes with two-shot and says why.
  TuningTable table;
  table.topology_key = t.key();
  table.fabric = Fabric::kNvlink;
  table.tables.push_back({2, {{SIZE_MAX, tpcommAlgoHostOneShot}}});
  o.forced_algo = -1;
  o.tuning = &table;
  const PreviewWorld w = previewWorld(t, {0, 1}, o);
  EXPECT_EQ(w.rows[0].decision.algo, tpcommAlgoTwoShot);
  EXPECT_TRUE(test::contains(w.rows[0].decision.reason, "host_oneshot unavailable"))
      << w.rows[0].decision.reason;
}

TEST(DoctorPreview, EnvironmentOverridesAreReflected) {
  const topo::Topology t = test::topoFixture("h200_2x_nvlink");
  PreviewOptions o;
  o.forced_algo = tpcommAlgoTwoShot;
  PreviewWorld w = previewWorld(t, {0, 1}, o);
  for (const PreviewRow& r : w.rows) {
    EXPECT_EQ(r.decision.algo, tpcommAlgoTwoShot);
    EXPECT_TRUE(test::contains(r.decision.reason, "forced")) << r.decision.reason;
  }
  o.forced_algo = -1;
  o.transport = 2;  // TPCOMM_TRANSPORT=host
  w = previewWorld(t, {0, 1}, o);
  EXPECT_EQ(w.fabric, Fabric::kHost);
  EXPECT_TRUE(test::contains(w.fabric_reason, "TPCOMM_TRANSPORT=host")) << w.fabric_reason;

  o.transport = 1;  // TPCOMM_TRANSPORT=p2p where there is none: the communicator would not start
  w = previewWorld(test::topoFixture("rtx_4090_4x_no_p2p"), {0, 1}, o);
  EXPECT_TRUE(test::contains(w.error, "TPCOMM_TRANSPORT=p2p")) << w.error;
  EXPECT_TRUE(w.rows.empty());
  EXPECT_EQ(previewFailures({w}, nullptr), 1);
}

TEST(DoctorPreview, HypotheticalMachineShowsEveryFabric) {
  PreviewOptions o;
  const std::vector<PreviewWorld> ws = previewHypothetical(o);
  ASSERT_EQ(ws.size(), 3u * 7u);
  EXPECT_EQ(ws.front().fabric, Fabric::kNvlink);
  EXPECT_EQ(ws.front().world, 2);
  EXPECT_EQ(ws.back().fabric, Fabric::kHost);
  EXPECT_EQ(ws.back().world, 8);
  for (const PreviewWorld& w : ws) {
    EXPECT_TRUE(w.gpus.empty());
    EXPECT_EQ(w.rows.size(), previewSizes().size());
  }
  o.transport = 2;
  EXPECT_EQ(previewHypothetical(o).size(), 7u);
}

}  // namespace
}  // namespace tpcomm::cli
