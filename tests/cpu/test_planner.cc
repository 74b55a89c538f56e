// The call planner (src/plan/planner.cc) names the variant each call runs, over worlds, sizes,
// alignments and transports; the variant table (src/kernels/runtime/variant_table.cc) has a kernel
// for every variant the planner can name; the knob strings (TPCOMM_KNOBS, config.launchKnobs) parse
// and fail as documented.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "comm/comm.h"
#include "comm/lifecycle/config.h"
#include "comm/lifecycle/registry.h"
#include "kernels/runtime/algo_launch.h"
#include "kernels/runtime/variant_table.h"
#include "plan/planner.h"
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

struct Row {
  int world;
  Fabric fabric;
  size_t bytes;
  bool aligned;
  tpcommVariant_t want;
};

TEST(Planner, NamesTheVariantOfEachCall) {
  const Row rows[] = {
      // Peer memory: the lean one-shot for single steps of whole aligned vectors, else general.
      {2, Fabric::kNvlink, 4 * KiB, true, tpcommVariantP2pOneShotLean},
      {2, Fabric::kNvlink, 4 * KiB, false, tpcommVariantP2pOneShot},
      {2, Fabric::kNvlink, 4 * KiB + 2, true, tpcommVariantP2pOneShot},
      {2, Fabric::kNvlink, 1 * MiB, true, tpcommVariantP2pOneShotLean},
      {2, Fabric::kNvlink, 2 * MiB, true, tpcommVariantP2pOneShot},  // two steps
      {8, Fabric::kNvlink, 256 * KiB, true, tpcommVariantP2pOneShotLean},
      {8, Fabric::kNvlink, 256 * KiB + 16, true, tpcommVariantP2pTwoShot},
      {4, Fabric::kPcie, 64 * KiB, true, tpcommVariantP2pOneShotLean},
      {4, Fabric::kPcie, 1 * MiB, true, tpcommVariantP2pTwoShot},
      // Host memory: the sentinel protocol where a call fits its one step, the one-shot's LL never
      // by default; above, bulk at two ranks, from three the host two-shot (LL up to
      // host_ll_bytes, pulled above).
      {2, Fabric::kHost, 16 * KiB, true, tpcommVariantHostOneShotSentinelLean},
      {2, Fabric::kHost, 16 * KiB, false, tpcommVariantHostOneShotSentinel},
      {2, Fabric::kHost, 512 * KiB, true, tpcommVariantHostOneShotSentinelLean},
      {2, Fabric::kHost, 512 * KiB + 16, true, tpcommVariantHostBulk},
      {8, Fabric::kHost, 64 * KiB, true, tpcommVariantHostOneShotSentinelLean},
      {8, Fabric::kHost, 256 * KiB, true, tpcommVariantHostTwoShotLL},
      {8, Fabric::kHost, 1 * MiB, true, tpcommVariantHostTwoShotPull},
      {8, Fabric::kHost, 4 * MiB, true, tpcommVariantNccl},
  };
  for (const Row& r : rows) {
    const CallPlan p = planCall(factsFor(r.world, r.fabric), Call{r.bytes, r.aligned});
    EXPECT_EQ(p.variant, r.want) << "world " << r.world << ", " << fabricName(r.fabric) << ", "
                                 << r.bytes << " bytes, aligned " << r.aligned << ": got "
                                 << tpcommVariantName(p.variant) << " (" << p.decision.reason
                                 << ")";
  }
}

TEST(Planner, ForcedAlgorithmsAndTheirVariants) {
  struct Forced {
    int algo;
    int world;
    Fabric fabric;
    tpcommVariant_t want;
  };
  const Forced cases[] = {
      {tpcommAlgoTwoShot, 2, Fabric::kNvlink, tpcommVariantP2pTwoShot},
      {tpcommAlgoIsland, 4, Fabric::kPcie, tpcommVariantIsland},
      {tpcommAlgoHostTwoShot, 4, Fabric::kHost, tpcommVariantHostTwoShotLL},
      {tpcommAlgoHostBulk, 2, Fabric::kHost, tpcommVariantHostBulk},
      {tpcommAlgoNccl, 2, Fabric::kNvlink, tpcommVariantNccl},
  };
  for (const Forced& c : cases) {
    CommFacts f = factsFor(c.world, c.fabric);
    f.forced_algo = c.algo;
    EXPECT_EQ(planCall(f, Call{64 * KiB, true}).variant, c.want) << tpcommAlgoName(c.algo);
  }
  // A call no algorithm may serve is no variant, with the policy's error.
  CommFacts f = factsFor(3, Fabric::kPcie);
  f.forced_algo = tpcommAlgoIsland;
  const CallPlan p = planCall(f, Call{64 * KiB, true});
  EXPECT_EQ(p.variant, tpcommVariantNone);
  EXPECT_EQ(p.decision.error, tpcommUnsupported);
}

TEST(Planner, KnobsSwitchVariantsOff) {
  CommFacts f = factsFor(2, Fabric::kNvlink);
  ASSERT_EQ(parseLaunchKnobs("lean=0", &f.knobs), "");
  EXPECT_EQ(planCall(f, Call{4 * KiB, true}).variant, tpcommVariantP2pOneShot);
  CommFacts h = factsFor(2, Fabric::kHost);
  ASSERT_EQ(parseLaunchKnobs("host_sentinel=0", &h.knobs), "");
  EXPECT_EQ(planCall(h, Call{4 * KiB, true}).variant, tpcommVariantHostOneShotLL);
}

TEST(Planner, ChunkedVariantsCarryNoOneShotGeometry) {
  const CallPlan p = planCall(factsFor(8, Fabric::kNvlink), Call{4 * MiB, true});
  ASSERT_EQ(p.variant, tpcommVariantP2pTwoShot);
  EXPECT_GT(p.chunk_vecs, 0u);
  EXPECT_EQ(p.geometry.region + p.geometry.nsteps + p.geometry.per, 0u);
}

TEST(VariantTable, EveryKernelVariantHasKernelsAtEveryWorldClass) {
  int rows = 0;
  const VariantRow* table = variantRows(&rows);
  ASSERT_EQ(rows, static_cast<int>(tpcommNumVariants));
  std::set<std::string> names;
  for (int r = 0; r < rows; ++r) {
    EXPECT_EQ(static_cast<int>(table[r].id), r);
    EXPECT_TRUE(names.insert(table[r].name).second) << "twice: " << table[r].name;
    for (int w : kWorldClasses)
      for (int d = 0; d < kNumDtypes; ++d) {
        const bool exists = table[r].kernels && (!table[r].island || w >= 4);
        EXPECT_EQ(variantKernel(table[r].id, w, d) != nullptr, exists)
            << table[r].name << ", world " << w << ", dtype " << d;
      }
  }
  for (int v = 0; v < tpcommNumVariants; ++v) {
    const auto variant = static_cast<tpcommVariant_t>(v);
    // Every value is a variant with a name (no reserved values: the name lookups rely on it).
    EXPECT_NE(tpcommVariantName(v), nullptr) << v;
    EXPECT_EQ(variantRow(variant)->kernels != nullptr, isKernelVariant(variant)) << v;
  }
  EXPECT_EQ(tpcommVariantName(tpcommNumVariants), nullptr);
  EXPECT_EQ(tpcommVariantName(-1), nullptr);
  EXPECT_STREQ(tpcommVariantName(tpcommVariantHostOneShotLL), "host_oneshot_ll");
  EXPECT_FALSE(isKernelVariant(tpcommVariantNccl));
  EXPECT_TRUE(isFusedVariant(tpcommVariantFusedHostOneShotFp8));
  EXPECT_FALSE(isFusedVariant(tpcommVariantAddRmsNorm));
}

// What the launch reads from a row: the lean kernels' checker warp (the plan's threads plus 32),
// and the island schedule's split.
TEST(VariantTable, LaunchFactsComeFromTheRows) {
  for (tpcommVariant_t v : {tpcommVariantP2pOneShotLean, tpcommVariantHostOneShotSentinelLean,
                            tpcommVariantP2pOneShotPullLean, tpcommVariantP2pOneShotPullLL})
    EXPECT_EQ(variantRow(v)->extra_threads, 32) << tpcommVariantName(v);
  EXPECT_EQ(variantRow(tpcommVariantP2pOneShot)->extra_threads, 0);
  EXPECT_TRUE(variantRow(tpcommVariantIslandPull)->island);
  EXPECT_FALSE(variantRow(tpcommVariantP2pTwoShotPull)->island);
  EXPECT_TRUE(variantRow(tpcommVariantP2pTwoShotPull)->pull);
}

// tpcommCommGetVariantStats on a registered communicator object (no GPU: nothing else is set up).
TEST(VariantStats, CopiesTheCountsAndZeroesTheRest) {
  tpcommComm c;
  c.state = CommState::kReady;
  c.variant_calls[tpcommVariantHostOneShotLL] = 3;
  c.variant_calls[tpcommVariantNccl] = 1;
  registerComm(&c);
  uint64_t calls[tpcommNumVariants + 2];
  for (uint64_t& x : calls) x = 99;
  EXPECT_EQ(tpcommCommGetVariantStats(&c, calls, tpcommNumVariants + 2), tpcommSuccess);
  EXPECT_EQ(calls[tpcommVariantHostOneShotLL], 3u);
  EXPECT_EQ(calls[tpcommVariantNccl], 1u);
  EXPECT_EQ(calls[tpcommVariantP2pOneShotLean], 0u);
  EXPECT_EQ(calls[tpcommNumVariants + 1], 0u);
  EXPECT_EQ(tpcommCommGetVariantStats(&c, nullptr, 4), tpcommInvalidArgument);
  EXPECT_EQ(tpcommCommGetVariantStats(&c, calls, -1), tpcommInvalidArgument);
  unregisterComm(&c);
  EXPECT_EQ(tpcommCommGetVariantStats(&c, calls, 4), tpcommInvalidUsage);
}

TEST(LaunchKnobsSpec, ParsesNamesAndRefusesTheRest) {
  LaunchKnobs k;
  EXPECT_EQ(parseLaunchKnobs("", &k), "");
  EXPECT_EQ(parseLaunchKnobs("block_bytes=4096,push_batch=4,lean=0,pdl=0", &k), "");
  EXPECT_EQ(k.block_bytes, 4096);
  EXPECT_EQ(k.push_batch, 4);
  EXPECT_FALSE(k.lean);
  EXPECT_FALSE(k.pdl);
  EXPECT_NE(parseLaunchKnobs("blocks=4", &k).find("unknown knob \"blocks\""), std::string::npos);
  EXPECT_NE(parseLaunchKnobs("lean=2", &k).find("expected 0 or 1"), std::string::npos);
  EXPECT_NE(parseLaunchKnobs("block_bytes=4k", &k).find("whole number"), std::string::npos);
  EXPECT_NE(parseLaunchKnobs("lean", &k).find("not name=value"), std::string::npos);
}

TEST(LaunchKnobsSpec, ConfigKnobsApplyOnTopAndAreChecked) {
  tpcommConfig_t cfg = TPCOMM_CONFIG_INITIALIZER;
  cfg.launchKnobs = "host_sentinel=0,push_eighths=3";
  Settings s;
  ASSERT_EQ(resolveSettings(&cfg, &s), tpcommSuccess) << tpcommGetLastError();
  EXPECT_FALSE(s.knobs.host_sentinel);
  EXPECT_EQ(s.knobs.push_eighths, 3);
  cfg.launchKnobs = "push_eighths=9";
  EXPECT_EQ(resolveSettings(&cfg, &s), tpcommInvalidArgument);
  EXPECT_NE(std::string(tpcommGetLastError()).find("config.launchKnobs=push_eighths=9"),
            std::string::npos)
      << tpcommGetLastError();
  // A version-1 struct (without launchKnobs) is read without it.
  cfg.launchKnobs = "push_eighths=9";
  cfg.size = offsetof(tpcommConfig_t, launchKnobs);
  cfg.version = 1;
  EXPECT_EQ(resolveSettings(&cfg, &s), tpcommSuccess) << tpcommGetLastError();
  EXPECT_EQ(s.knobs.push_eighths, 2);
}

// An empty item (a trailing or doubled comma) is refused as every other malformed one is.
TEST(LaunchKnobsSpec, EmptyItemsAreRefused) {
  LaunchKnobs k;
  EXPECT_EQ(parseLaunchKnobs("lean=1,", &k), "\"\" is not name=value");
  EXPECT_EQ(parseLaunchKnobs("lean=1,,pdl=0", &k), "\"\" is not name=value");
}

}  // namespace
}  // namespace tpcomm
