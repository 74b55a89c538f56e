// The copy-engine one-shot (oneshot_ce) as the host sees it: forced only (TPCOMM_ALGO,
// config.algo), named by the planner and Explain, never picked by auto or a tuning table, refused
// with a reason where it cannot run; its CE-area layout; name lookups that refuse what is no
// algorithm's name or value.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "comm/comm.h"
#include "comm/lifecycle/config.h"
#include "comm/lifecycle/registry.h"
#include "common/env.h"
#include "kernels/layout/ce_layout.h"
#include "plan/planner.h"
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

bool has(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}

TEST(OneShotCe, ForcedNamesItsVariantAtEveryWorldAndSize) {
  for (Fabric fabric : {Fabric::kNvlink, Fabric::kPcie})
    for (int world = 2; world <= 8; ++world)
      for (size_t bytes : {size_t{2}, 16 * KiB, 1 * MiB + 6, 64 * MiB}) {
        const CommFacts f = factsFor(world, fabric, tpcommAlgoOneShotCe);
        const CallPlan p = planCall(f, Call{bytes, bytes % 16 == 0});
        ASSERT_EQ(p.decision.error, tpcommSuccess) << p.decision.reason;
        EXPECT_EQ(p.decision.algo, tpcommAlgoOneShotCe);
        EXPECT_EQ(p.variant, tpcommVariantP2pOneShotCe)
            << "world " << world << ", " << bytes << " bytes: " << tpcommVariantName(p.variant);
        EXPECT_TRUE(has(p.decision.reason, "oneshot_ce")) << p.decision.reason;
        EXPECT_TRUE(has(p.decision.reason, "forced only")) << p.decision.reason;
        // A step is a source's region of a landing slot (the peer slots' 16 MiB split by world).
        const size_t region = 16 * MiB / kVecBytes / world;
        EXPECT_EQ(p.geometry.region, region);
        EXPECT_EQ(p.geometry.nsteps, (bytes + region * kVecBytes - 1) / (region * kVecBytes));
        EXPECT_GE(p.grid.blocks, 1);
        EXPECT_GE(p.grid.threads, 32);
      }
  // 64 MiB at world 2: eight steps of 8 MiB (each its guard, copies, wait and reduce kernel).
  EXPECT_EQ(planCall(factsFor(2, Fabric::kNvlink, tpcommAlgoOneShotCe), Call{64 * MiB, true})
                .geometry.nsteps,
            8u);
}

TEST(OneShotCe, RefusedWithAReasonWhereItCannotRun) {
  // No landing slots: the communicator was not created with oneshot_ce forced.
  CommFacts f = factsFor(4, Fabric::kNvlink, tpcommAlgoOneShotCe);
  f.ce_staging = false;
  CallPlan p = planCall(f, Call{64 * KiB, true});
  EXPECT_EQ(p.decision.error, tpcommUnsupported);
  EXPECT_EQ(p.variant, tpcommVariantNone);
  EXPECT_TRUE(has(p.decision.reason, "forced at init")) << p.decision.reason;
  // No P2P: the copies are peer copies.
  p = planCall(factsFor(2, Fabric::kHost, tpcommAlgoOneShotCe), Call{64 * KiB, true});
  EXPECT_EQ(p.decision.error, tpcommUnsupported);
  EXPECT_TRUE(has(p.decision.reason, "peer-to-peer")) << p.decision.reason;
}

TEST(OneShotCe, AutoAndTuningTablesNeverPickIt) {
  for (Fabric fabric : {Fabric::kNvlink, Fabric::kPcie, Fabric::kHost})
    for (int world = 2; world <= 8; ++world)
      for (size_t bytes = 16; bytes <= 256 * MiB; bytes *= 4) {
        CommFacts f = factsFor(world, fabric);
        f.ce_staging = fabric != Fabric::kHost;  // even with landing slots
        const CallPlan p = planCall(f, Call{bytes, true});
        EXPECT_NE(p.variant, tpcommVariantP2pOneShotCe) << world << " " << bytes;
        EXPECT_NE(p.decision.algo, tpcommAlgoOneShotCe) << world << " " << bytes;
      }
  // A table that names it (a future tune, a hand-edited file) is not obeyed unless forced.
  const SizeTable tuned = {{SIZE_MAX, tpcommAlgoOneShotCe}};
  CommFacts f = factsFor(2, Fabric::kPcie);
  f.ce_staging = true;
  f.tuned = &tuned;
  const CallPlan p = planCall(f, Call{4 * KiB, true});
  EXPECT_EQ(p.decision.error, tpcommSuccess) << p.decision.reason;
  EXPECT_EQ(p.variant, tpcommVariantP2pTwoShot);
  EXPECT_TRUE(has(p.decision.reason, "oneshot_ce unavailable (a forced-only algorithm"))
      << p.decision.reason;
}

// tpcommCommExplain on a registered communicator object (the planner needs no GPU).
TEST(OneShotCe, ExplainNamesTheVariantAndWhy) {
  static char ce_area;  // the planner only asks whether the CE area exists
  tpcommComm c;
  c.state = CommState::kReady;
  c.world = 2;
  c.rank = 0;
  c.fabric = Fabric::kPcie;
  c.settings.algo = tpcommAlgoOneShotCe;
  c.dev.world = 2;
  c.dev.slot_bytes = 16 * MiB;
  c.dev.ce[0] = &ce_area;
  c.slots = slotCapacity(c.dev);
  registerComm(&c);
  tpcommCallInfo_t info{};
  EXPECT_EQ(tpcommCommExplain(&c, 7168, tpcommBfloat16, &info), tpcommSuccess)
      << tpcommGetLastError();
  EXPECT_EQ(info.algo, tpcommAlgoOneShotCe);
  EXPECT_EQ(info.variant, tpcommVariantP2pOneShotCe);
  EXPECT_STREQ(tpcommVariantName(info.variant), "p2p_oneshot_ce");
  EXPECT_TRUE(has(info.reason, "forced only")) << info.reason;
  EXPECT_GE(info.blocks, 1);
  // Without the area (not forced at init): refused, and the reason says so.
  c.dev.ce[0] = nullptr;
  c.slots = slotCapacity(c.dev);
  EXPECT_EQ(tpcommCommExplain(&c, 7168, tpcommBfloat16, &info), tpcommUnsupported);
  EXPECT_TRUE(has(info.reason, "forced at init")) << info.reason;
  unregisterComm(&c);
}

TEST(OneShotCe, EnvAndConfigTakeItsNameAndRefuseOtherValues) {
  auto algoOf = [](const char* value) {
    return parseEnvironment([value](const char* name) -> const char* {
      return std::string(name) == "TPCOMM_ALGO" ? value : nullptr;
    });
  };
  Env e = algoOf("oneshot_ce");
  EXPECT_TRUE(e.errors.empty());
  EXPECT_EQ(e.algo, tpcommAlgoOneShotCe);
  EXPECT_EQ(parseAlgoName("oneshot_ce"), 10);
  // A name that is none of the algorithms' is refused.
  e = algoOf("oneshot_pull_typo");
  ASSERT_EQ(e.errors.size(), 1u);
  EXPECT_TRUE(has(e.errors[0], "TPCOMM_ALGO")) << e.errors[0];
  EXPECT_EQ(parseAlgoName(""), -1);
  EXPECT_STREQ(tpcommAlgoName(tpcommAlgoOneShotCe), "oneshot_ce");
  // config.algo: the new value is a tpcommAlgo_t; values past the enum are not.
  tpcommConfig_t cfg = TPCOMM_CONFIG_INITIALIZER;
  Settings s;
  cfg.algo = tpcommAlgoOneShotCe;
  ASSERT_EQ(resolveSettings(&cfg, &s), tpcommSuccess) << tpcommGetLastError();
  EXPECT_EQ(s.algo, tpcommAlgoOneShotCe);
  EXPECT_TRUE(needsCeStaging(s.algo));
  for (int a : {static_cast<int>(tpcommNumAlgos), -2}) {
    cfg.algo = a;
    EXPECT_EQ(resolveSettings(&cfg, &s), tpcommInvalidArgument) << a;
    EXPECT_TRUE(has(tpcommGetLastError(), "not a tpcommAlgo_t")) << tpcommGetLastError();
  }
  // Every value of the enum has a name (no reserved values: the name lookups rely on it), and
  // each name parses back to its value.
  for (int a = 0; a < tpcommNumAlgos; ++a) {
    ASSERT_NE(tpcommAlgoName(a), nullptr) << a;
    EXPECT_EQ(parseAlgoName(tpcommAlgoName(a)), a) << tpcommAlgoName(a);
  }
  EXPECT_FALSE(needsCeStaging(-1));
  EXPECT_FALSE(needsCeStaging(tpcommAlgoOneShot));
}

// The host's copy addresses and the kernel's loads come from the same functions; regions of
// different sources and slots never overlap and stay inside the area.
TEST(OneShotCe, LandingRegionsTileTheArea) {
  constexpr size_t slot = 64 * KiB;
  static char area[ceAreaBytes(slot)];
  for (int world = 1; world <= kMaxRanks; ++world) {
    const size_t region = slot / kVecBytes / world * kVecBytes;
    char* prev_end = area + kCeControlBytes;
    for (int s = 0; s < kNumSlots; ++s)
      for (int r = 0; r < world; ++r) {
        char* at = ceLanding(area, slot, s, r, region);
        EXPECT_GE(at, prev_end) << "slot " << s << " source " << r;
        EXPECT_EQ(static_cast<size_t>(at - area) % kVecBytes, 0u);
        prev_end = at + region;
        EXPECT_LE(static_cast<size_t>(prev_end - area), ceAreaBytes(slot));
      }
  }
  EXPECT_GE(kCeControlBytes, sizeof(CeControl));
  EXPECT_EQ(ceStepMark(0), 1u);  // zeroed memory is never a step's flag
  EXPECT_NE(ceStepMark(41), kCeNoFlag);
}

}  // namespace
}  // namespace tpcomm
