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
  EXPECT_EQ(choose(nvlink(2, 1 * MiB + 1)).algo, tpcommAlgoTwoShot);
  EXPECT_EQ(choose(nvlink(2, 16 * MiB)).algo, tpcommAlgoTwoShot);
  EXPECT_EQ(choose(nvlink(2, 64 * MiB)).algo, tpcommAlgoOneShot);
  const Decision d = choose(nvlink(2, 4 * MiB));
  EXPECT_FALSE(d.fallback);
  EXPECT_EQ(d.error, tpcommSuccess);
  EXPECT_NE(d.reason.find("twoshot by default table for nvlink, world 2"), std::string::npos)
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
  PolicyInput p = nvlink(2, 4 * KiB);
  p.fabric = Fabric::kHost;
  p.host_transport = true;
  EXPECT_EQ(choose(p).algo, tpcommAlgoHostOneShot);
  p.bytes = 64 * KiB;
  EXPECT_EQ(choose(p).algo, tpcommAlgoHostTwoShot);
  p.bytes = 1 * MiB;
  Decision d = choose(p);
  EXPECT_EQ(d.algo, tpcommAlgoNccl);
  EXPECT_TRUE(d.fallback);
  EXPECT_NE(d.reason.find("NCCL measured faster"), std::string::npos) << d.reason;
  // Without NCCL the host kernels serve every size, and the reason says why.
  p.nccl_available = false;
  d = choose(p);
  EXPECT_EQ(d.algo, tpcommAlgoHostTwoShot);
  EXPECT_FALSE(d.fallback);
  EXPECT_NE(d.reason.find("no NCCL communicator"), std::string::npos) << d.reason;
}

TEST(Policy, StrictModeRefusesEveryFallback) {
  PolicyInput p = nvlink(2, 1 * MiB);
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
  EXPECT_EQ(choose(p).error, tpcommUnsupported);
  p.forced_algo = 42;
  EXPECT_EQ(choose(p).error, tpcommInvalidArgument);
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
    }
}

}  // namespace
}  // namespace tpcomm
