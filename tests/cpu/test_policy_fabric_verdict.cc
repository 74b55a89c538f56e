// The policy from the fabric probe's verdict: synthetic probes shaped like the published PCIe
// fabrics (tests/cpu/support/synthetic_fabrics.h) go through judgeFabric into the policy, and a
// collapsing fabric never gets SM pushes.
#include <gtest/gtest.h>

#include <cstdint>

#include "plan/policy.h"
#include "support/synthetic_fabrics.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

bool isPush(int a) {
  return a == tpcommAlgoOneShot || a == tpcommAlgoTwoShot || a == tpcommAlgoIsland;
}

PolicyInput pcie(int world, size_t bytes, const topo::FabricProbe& probe, bool two_islands = false,
                 bool p2p = true) {
  PolicyInput in;
  in.world = world;
  in.bytes = bytes;
  in.fabric = p2p ? Fabric::kPcie : Fabric::kHost;
  in.host_transport = !p2p;
  in.two_islands = two_islands;
  in.nccl_available = true;
  in.fabric_verdict = topo::judgeFabric(probe, p2p).verdict;
  return in;
}

std::vector<size_t> sizes() {
  std::vector<size_t> s;
  for (size_t b = 1 * KiB; b <= 64 * MiB; b *= 2) s.push_back(b);
  return s;
}

const topo::FabricProbe kBroadcomTurin = topo::syntheticFabric(37, 27, 56, 2.7, 27);
const topo::FabricProbe kHealthySwitch = topo::syntheticFabric(54, 45, 56, 39, 35);
const topo::FabricProbe kTwoSocketsNoSwitch = topo::syntheticFabric(53, 45, 56, 23.8, 22, 23.8);

// One-shot pull for decode sizes (14 KiB: one 7168-wide
// bf16 row), two-shot pull, then NCCL; never a push, at any world or size.
TEST(PolicyFabricVerdict, ACollapsingFabricPullsAndNeverPushes) {
  for (int world = 2; world <= 8; ++world)
    for (size_t bytes : sizes())
      for (bool islands : {false, true}) {
        PolicyInput in = pcie(world, bytes, kBroadcomTurin, islands && world % 2 == 0);
        const Decision d = choose(in);
        ASSERT_EQ(d.error, tpcommSuccess) << d.reason;
        EXPECT_FALSE(isPush(d.algo)) << "world " << world << ", " << bytes << ": " << d.reason;
      }
  PolicyInput in = pcie(8, 14 * KiB, kBroadcomTurin);
  Decision d = choose(in);
  EXPECT_EQ(d.algo, tpcommAlgoOneShotPull);
  EXPECT_NE(d.reason.find("oneshot_pull by default table for pcie (fabric probe: write_collapse)"),
            std::string::npos)
      << d.reason;
  in.bytes = 512 * KiB;
  EXPECT_EQ(choose(in).algo, tpcommAlgoTwoShotPull);
  in.bytes = 16 * MiB;
  d = choose(in);
  EXPECT_EQ(d.algo, tpcommAlgoNccl);
  EXPECT_TRUE(d.fallback);
  in.world = 2;
  in.bytes = 64 * MiB;
  EXPECT_EQ(choose(in).algo, tpcommAlgoTwoShotPull);
  in.nccl_available = false;  // where NCCL would have served: the two-shot pull
  in.world = 8;
  in.bytes = 16 * MiB;
  EXPECT_EQ(choose(in).algo, tpcommAlgoTwoShotPull);
}

// A healthy switch and a two-socket box without switches keep the push tables (the verdict is
// named in the reason); with two islands at 8 ranks the island algorithm above 1 MiB.
TEST(PolicyFabricVerdict, HealthyFabricsPush) {
  for (const topo::FabricProbe* p : {&kHealthySwitch, &kTwoSocketsNoSwitch}) {
    PolicyInput in = pcie(8, 14 * KiB, *p);
    EXPECT_EQ(in.fabric_verdict, FabricVerdict::kPushFine);
    const Decision d = choose(in);
    EXPECT_EQ(d.algo, tpcommAlgoOneShot);
    EXPECT_NE(d.reason.find("(fabric probe: push_fine)"), std::string::npos) << d.reason;
    in.bytes = 512 * KiB;
    EXPECT_EQ(choose(in).algo, tpcommAlgoTwoShot);
  }
  PolicyInput in = pcie(8, 4 * MiB, kTwoSocketsNoSwitch, /*two_islands=*/true);
  EXPECT_EQ(choose(in).algo, tpcommAlgoIsland);
  // The same sizes without a verdict: the tables are the push ones too, and the reason says
  // nothing of a probe.
  in.fabric_verdict = FabricVerdict::kUnknown;
  const Decision d = choose(in);
  EXPECT_EQ(d.algo, tpcommAlgoIsland);
  EXPECT_EQ(d.reason.find("fabric probe"), std::string::npos) << d.reason;
}

TEST(PolicyFabricVerdict, NoP2pUsesHostMemory) {
  topo::FabricProbe none;
  none.host = {52, 50, 55, 1.38};
  PolicyInput in = pcie(2, 4 * KiB, none, false, /*p2p=*/false);
  EXPECT_EQ(in.fabric_verdict, FabricVerdict::kNoP2p);
  EXPECT_EQ(choose(in).algo, tpcommAlgoHostOneShot);
  in.bytes = 4 * MiB;
  EXPECT_EQ(choose(in).algo, tpcommAlgoHostBulk);
}

// The verdict steers PCIe only: NVLink never collapses, and a measured table is the machine's
// own answer (tpcomm tune timed the pushes on this very fabric).
TEST(PolicyFabricVerdict, OnlyTheBuiltInPcieTablesFollowIt) {
  PolicyInput in = pcie(8, 14 * KiB, kBroadcomTurin);
  in.fabric = Fabric::kNvlink;
  EXPECT_EQ(choose(in).algo, tpcommAlgoOneShot);
  in.fabric = Fabric::kPcie;
  const SizeTable tuned = {{SIZE_MAX, tpcommAlgoTwoShot}};
  in.tuned = &tuned;
  EXPECT_EQ(choose(in).algo, tpcommAlgoTwoShot);
  in.tuned = nullptr;
  in.forced_algo = tpcommAlgoOneShot;  // forcing is the user's call
  EXPECT_EQ(choose(in).algo, tpcommAlgoOneShot);
}

// A measured table's push on a collapsing fabric is the machine's own answer: the reason names
// the verdict and warns of nothing.
TEST(PolicyFabricVerdict, AMeasuredPushCarriesNoCollapseWarning) {
  PolicyInput in = pcie(8, 14 * KiB, kBroadcomTurin);
  const SizeTable tuned = {{SIZE_MAX, tpcommAlgoTwoShot}};
  in.tuned = &tuned;
  const Decision d = choose(in);
  EXPECT_EQ(d.algo, tpcommAlgoTwoShot);
  EXPECT_EQ(d.reason,
            "twoshot by tuning table for pcie (fabric probe: write_collapse), world 8, 14 KiB");
}

}  // namespace
}  // namespace tpcomm
