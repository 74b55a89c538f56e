// The policy (src/plan/policy.cc) is pure: every decision is checked here without a GPU.
#include <gtest/gtest.h>

#include <cstdint>

#include "plan/policy.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

PolicyInput nvlink(int world, size_t bytes) {
  PolicyInput in;
  in.world = world;
  in.bytes = bytes;
  in.fabric = Fabric::kNvlink;
  in.nccl_available = true;
  return in;
}

TEST(Policy, NvlinkWorld2DefaultsFollowTheMeasurements) {
  EXPECT_EQ(choose(nvlink(2, 1 * KiB)).algo, tpcommAlgoOneShot);
  EXPECT_EQ(choose(nvlink(2, 1 * MiB)).algo, tpcommAlgoOneShot);
  // Multi-step one-shot (1 MiB steps, split warps) above: it beat two-shot at 2-64 MiB.
  EXPECT_EQ(choose(nvlink(2, 1 * MiB + 1)).algo, tpcommAlgoOneShot);
  EXPECT_EQ(choose(nvlink(2, 4 * MiB)).algo, tpcommAlgoOneShot);
  EXPECT_EQ(choose(nvlink(2, 64 * MiB)).algo, tpcommAlgoOneShot);
  const Decision d = choose(nvlink(2, 4 * MiB));
  EXPECT_FALSE(d.fallback);
  EXPECT_EQ(d.error, tpcommSuccess);
  EXPECT_NE(d.reason.find("oneshot by default table for nvlink, world 2"), std::string::npos)
      << d.reason;
}

TEST(Policy, LargerWorldsSwitchToTwoShotEarlier) {
  EXPECT_EQ(choose(nvlink(8, 256 * KiB)).algo, tpcommAlgoOneShot);
  EXPECT_EQ(choose(nvlink(8, 256 * KiB + 1)).algo, tpcommAlgoTwoShot);
  PolicyInput p = nvlink(4, 128 * KiB);
  p.fabric = Fabric::kPcie;
  EXPECT_EQ(choose(p).algo, tpcommAlgoTwoShot);  // PCIe, world > 2: two-shot above 64 KiB
}

TEST(Policy, HostFabricUsesHostKernelsThenSaysNccl) {
  // World 2 (measured): the one-shot up to 512 KiB (one step of the host sentinel inboxes),
  // the bulk protocol above, NCCL never.
  PolicyInput p = nvlink(2, 4 * KiB);
  p.fabric = Fabric::kHost;
  p.host_transport = true;
  EXPECT_EQ(choose(p).algo, tpcommAlgoHostOneShot);
  p.bytes = 512 * KiB;
  EXPECT_EQ(choose(p).algo, tpcommAlgoHostOneShot);
  p.bytes = 512 * KiB + 1;
  EXPECT_EQ(choose(p).algo, tpcommAlgoHostBulk);
  p.bytes = 64 * MiB;
  EXPECT_EQ(choose(p).algo, tpcommAlgoHostBulk);
  EXPECT_FALSE(choose(p).fallback);
  // Larger worlds: bulk reads every peer's whole message, the host two-shot 2(n-1)/n of it, so
  // the two-shot takes the mid sizes and NCCL's ring (estimated) the large ones.
  p.world = 8;
  p.bytes = 64 * KiB;
  EXPECT_EQ(choose(p).algo, tpcommAlgoHostOneShot);
  p.bytes = 64 * KiB + 1;
  EXPECT_EQ(choose(p).algo, tpcommAlgoHostTwoShot);
  p.bytes = 1 * MiB;
  EXPECT_EQ(choose(p).algo, tpcommAlgoHostTwoShot);
  p.bytes = 1 * MiB + 1;
  Decision d = choose(p);
  EXPECT_EQ(d.algo, tpcommAlgoNccl);
  EXPECT_TRUE(d.fallback);
  // The built-in tables' NCCL rows are estimates, and the reason says so (a tuning table's are
  // measured: test_doctor_preview.cc).
  EXPECT_NE(d.reason.find("NCCL estimated faster here"), std::string::npos) << d.reason;
  p.world = 4;
  p.bytes = 4 * MiB;
  EXPECT_EQ(choose(p).algo, tpcommAlgoHostTwoShot);
  p.bytes = 4 * MiB + 1;
  EXPECT_EQ(choose(p).algo, tpcommAlgoNccl);
  // Without NCCL the host kernels serve every size, and the reason says why: from three ranks
  // the host two-shot, at two host_bulk.
  p.nccl_available = false;
  d = choose(p);
  EXPECT_EQ(d.algo, tpcommAlgoHostTwoShot);
  EXPECT_FALSE(d.fallback);
  EXPECT_NE(d.reason.find("no NCCL communicator"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("NCCL estimated faster but"), std::string::npos) << d.reason;
  p.world = 2;
  p.bytes = 64 * MiB;
  EXPECT_EQ(choose(p).algo, tpcommAlgoHostBulk);
}

TEST(Policy, StrictModeRefusesEveryFallback) {
  PolicyInput p = nvlink(8, 64 * MiB);
  p.fabric = Fabric::kHost;
  p.host_transport = true;
  p.strict = true;
  const Decision d = choose(p);
  EXPECT_EQ(d.error, tpcommFallbackRefused);
  EXPECT_NE(d.reason.find("TPCOMM_STRICT"), std::string::npos) << d.reason;
}

TEST(Policy, ForcedAlgorithmRunsOrFailsWithTheReasonNeverSilently) {
  PolicyInput p = nvlink(2, 1 * KiB);
  p.forced_algo = tpcommAlgoTwoShot;
  Decision d = choose(p);
  EXPECT_EQ(d.algo, tpcommAlgoTwoShot);
  EXPECT_FALSE(d.fallback);  // asked for, so not a fallback
  p.forced_algo = tpcommAlgoNccl;
  EXPECT_EQ(choose(p).algo, tpcommAlgoNccl);
  EXPECT_FALSE(choose(p).fallback);
  p.nccl_available = false;
  d = choose(p);
  EXPECT_EQ(d.error, tpcommUnsupported);
  EXPECT_NE(d.reason.find("nccl cannot run"), std::string::npos) << d.reason;
  p.forced_algo = tpcommAlgoHostOneShot;  // host transport not set up
  d = choose(p);
  EXPECT_EQ(d.error, tpcommUnsupported);
  EXPECT_NE(d.reason.find("host-memory transport is not set up"), std::string::npos) << d.reason;
  p.forced_algo = tpcommAlgoOneShot;
  p.fabric = Fabric::kHost;  // no P2P
  EXPECT_EQ(choose(p).error, tpcommUnsupported);
  p.forced_algo = tpcommAlgoIsland;
  p.fabric = Fabric::kPcie;
  EXPECT_EQ(choose(p).error, tpcommUnsupported);  // world 2: islands of one rank
  p.forced_algo = 42;
  EXPECT_EQ(choose(p).error, tpcommInvalidArgument);
}

TEST(Policy, ForcedIslandNeedsAnEvenWorldOfAtLeastFourAndP2p) {
  for (int world : {1, 2, 3, 5, 7}) {
    PolicyInput p = nvlink(world, 1 * MiB);
    p.forced_algo = tpcommAlgoIsland;
    const Decision d = choose(p);
    EXPECT_EQ(d.error, tpcommUnsupported) << world;
    EXPECT_NE(d.reason.find("island needs an even world of at least 4"), std::string::npos)
        << d.reason;
  }
  // Forced, it runs without islands in the topology (the communicator splits the ranks in
  // halves), over NVLink and PCIe alike.
  for (int world : {4, 6, 8})
    for (Fabric f : {Fabric::kNvlink, Fabric::kPcie}) {
      PolicyInput p = nvlink(world, 4 * KiB);
      p.fabric = f;
      p.forced_algo = tpcommAlgoIsland;
      const Decision d = choose(p);
      EXPECT_EQ(d.error, tpcommSuccess) << d.reason;
      EXPECT_EQ(d.algo, tpcommAlgoIsland);
    }
  PolicyInput p = nvlink(8, 4 * KiB);
  p.fabric = Fabric::kHost;
  p.forced_algo = tpcommAlgoIsland;
  const Decision d = choose(p);
  EXPECT_EQ(d.error, tpcommUnsupported);
  EXPECT_NE(d.reason.find("peer-to-peer"), std::string::npos) << d.reason;
}

PolicyInput pcieIslands(int world, size_t bytes) {
  PolicyInput in = nvlink(world, bytes);
  in.fabric = Fabric::kPcie;
  in.two_islands = true;
  return in;
}

TEST(Policy, AutoPicksIslandOnlyForLargeCallsOnTwoPcieIslands) {
  for (int world : {6, 8}) {
    EXPECT_EQ(choose(pcieIslands(world, 64 * KiB)).algo, tpcommAlgoOneShot);
    EXPECT_EQ(choose(pcieIslands(world, 64 * KiB + 1)).algo, tpcommAlgoTwoShot);
    EXPECT_EQ(choose(pcieIslands(world, 1 * MiB)).algo, tpcommAlgoTwoShot);
    const Decision d = choose(pcieIslands(world, 1 * MiB + 1));
    EXPECT_EQ(d.algo, tpcommAlgoIsland) << d.reason;
    EXPECT_NE(d.reason.find("island by default table for pcie"), std::string::npos) << d.reason;
    EXPECT_EQ(choose(pcieIslands(world, 64 * MiB)).algo, tpcommAlgoIsland);
  }
  // World 4 (islands of 2): 16-bit partials cross in fp32, as many bytes as two-shot sends.
  EXPECT_EQ(choose(pcieIslands(4, 64 * MiB)).algo, tpcommAlgoTwoShot);
  // Without islands, or on NVLink, the defaults do not change.
  PolicyInput p = pcieIslands(8, 64 * MiB);
  p.two_islands = false;
  EXPECT_EQ(choose(p).algo, tpcommAlgoTwoShot);
  p = pcieIslands(8, 64 * MiB);
  p.fabric = Fabric::kNvlink;
  EXPECT_EQ(choose(p).algo, tpcommAlgoTwoShot);
  EXPECT_EQ(&defaultTable(Fabric::kNvlink, 8, true), &defaultTable(Fabric::kNvlink, 8));
  EXPECT_EQ(&defaultTable(Fabric::kHost, 8, true), &defaultTable(Fabric::kHost, 8));
}

TEST(Policy, TunedIslandRowWithoutIslandsFallsBackToTwoShot) {
  const SizeTable tuned = {{SIZE_MAX, tpcommAlgoIsland}};
  PolicyInput p = nvlink(8, 4 * MiB);
  p.fabric = Fabric::kPcie;
  p.tuned = &tuned;
  Decision d = choose(p);
  EXPECT_EQ(d.algo, tpcommAlgoTwoShot);
  EXPECT_NE(d.reason.find("two equal islands"), std::string::npos) << d.reason;
  p.two_islands = true;
  d = choose(p);
  EXPECT_EQ(d.algo, tpcommAlgoIsland) << d.reason;
}

TEST(Policy, TunedTableWins) {
  const SizeTable tuned = {{8 * KiB, tpcommAlgoTwoShot}, {SIZE_MAX, tpcommAlgoNccl}};
  PolicyInput p = nvlink(2, 4 * KiB);
  p.tuned = &tuned;
  Decision d = choose(p);
  EXPECT_EQ(d.algo, tpcommAlgoTwoShot);
  EXPECT_NE(d.reason.find("tuning table"), std::string::npos) << d.reason;
  p.bytes = 1 * MiB;
  d = choose(p);
  EXPECT_EQ(d.algo, tpcommAlgoNccl);
  EXPECT_TRUE(d.fallback);
}

TEST(Policy, UnavailableTableChoiceFallsBackToTheTpcommBandwidthAlgorithm) {
  // A table row for the host kernels on a communicator without the host transport.
  const SizeTable tuned = {{SIZE_MAX, tpcommAlgoHostOneShot}};
  PolicyInput p = nvlink(2, 4 * KiB);
  p.tuned = &tuned;
  const Decision d = choose(p);
  EXPECT_EQ(d.algo, tpcommAlgoTwoShot);
  EXPECT_NE(d.reason.find("unavailable"), std::string::npos) << d.reason;
}

TEST(Policy, EveryDecisionIsAFunctionOfItsInputs) {
  // Ranks compute their decisions independently: the same inputs must give the same answer.
  for (int world = 1; world <= 8; ++world)
    for (size_t b = 1; b <= 128 * MiB; b *= 3) {
      const Decision a = choose(nvlink(world, b)), c = choose(nvlink(world, b));
      EXPECT_EQ(a.algo, c.algo);
      EXPECT_EQ(a.reason, c.reason);
      const Decision i = choose(pcieIslands(world, b)), j = choose(pcieIslands(world, b));
      EXPECT_EQ(i.algo, j.algo);
      EXPECT_EQ(i.reason, j.reason);
    }
}

}  // namespace
}  // namespace tpcomm
