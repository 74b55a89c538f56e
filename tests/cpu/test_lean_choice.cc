// Which one-shot calls run a lean kernel (src/plan/planner.cc, leanFits and planCall): exactly the
// single-step calls of whole, aligned vectors with at most one vector per thread, of the
// one-shot over peer memory and of the host sentinel protocol. The lean kernel has no step loop,
// no tail path and no batch loop, so a call outside these bounds that reached it would silently
// lose data: the boundaries are tested on both sides.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/layout/oneshot_layout.h"
#include "kernels/runtime/algo_launch.h"
#include "plan/planner.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

DeviceComm commOf(int world, size_t slot_bytes = 16 * MiB) {
  DeviceComm c{};
  c.world = world;
  c.slot_bytes = slot_bytes;
  return c;
}

// A communicator's facts with `algo` forced (the policy then always picks it).
CommFacts factsOf(const DeviceComm& c, int algo = tpcommAlgoOneShot,
                  const LaunchKnobs& k = LaunchKnobs{}) {
  CommFacts f;
  f.world = c.world;
  f.fabric = isHostAlgo(algo) ? Fabric::kHost : Fabric::kNvlink;
  f.host_transport = isHostAlgo(algo);
  f.nccl_available = true;
  f.forced_algo = algo;
  f.slots = slotCapacity(c);
  f.knobs = k;
  return f;
}

bool lean(tpcommVariant_t v) {
  return v == tpcommVariantP2pOneShotLean || v == tpcommVariantHostOneShotSentinelLean;
}

// Whether tpcommAllReduce would launch a lean kernel for a one-shot call of `bytes`, with the
// default knobs and steps of `step_bytes` (the communicator's default: 1 MiB).
bool leanCall(const DeviceComm& c, size_t bytes, bool aligned = true, size_t step_bytes = 1 * MiB,
              LaunchKnobs k = LaunchKnobs{}) {
  k.oneshot_step_bytes = static_cast<int>(step_bytes);
  return lean(planCall(factsOf(c, tpcommAlgoOneShot, k), Call{bytes, aligned}).variant);
}

TEST(LeanChoice, EverySingleStepPolicySizeFitsAtEveryWorld) {
  // The default grid gives a thread per vector up to 128 blocks of 512 threads (1 MiB), which is
  // also the default step: every one-shot call the policies make up to 1 MiB runs lean.
  for (int world = 2; world <= 8; ++world) {
    const DeviceComm c = commOf(world);
    for (size_t bytes = 16; bytes <= 1 * MiB; bytes *= 2)
      for (tpcommDataType_t dt : {tpcommFloat32, tpcommFloat16, tpcommBfloat16})
        EXPECT_TRUE(leanCall(c, bytes / dtypeSize(dt) * dtypeSize(dt)))
            << bytes << " bytes, world " << world << ", dtype " << dt;
  }
}

TEST(LeanChoice, MultiStepCallsDoNot) {
  const DeviceComm c = commOf(2);
  EXPECT_FALSE(leanCall(c, 2 * MiB));
  EXPECT_FALSE(leanCall(c, 1 * MiB + 16));
  // The step bounds it, not only the slot: 64 KiB steps make a 128 KiB call two steps.
  EXPECT_TRUE(leanCall(c, 64 * KiB, true, 64 * KiB));
  EXPECT_FALSE(leanCall(c, 64 * KiB + 16, true, 64 * KiB));
  // A small slot bounds it too (a source's region is slot / world): 64 KiB slots at world 4 hold
  // 16 KiB per source.
  const DeviceComm small = commOf(4, 64 * KiB);
  EXPECT_TRUE(leanCall(small, 16 * KiB));
  EXPECT_FALSE(leanCall(small, 16 * KiB + 16));
}

TEST(LeanChoice, PartialVectorsAndUnalignedBuffersDoNot) {
  const DeviceComm c = commOf(2);
  EXPECT_TRUE(leanCall(c, 4 * KiB));
  EXPECT_FALSE(leanCall(c, 4 * KiB, false));  // unaligned buffers
  EXPECT_FALSE(leanCall(c, 4 * KiB + 2));     // one bf16 element past a whole vector
  EXPECT_FALSE(leanCall(c, 14));              // less than one vector
  EXPECT_FALSE(leanCall(c, 0));
}

TEST(LeanChoice, MoreThanOneVectorPerThreadDoesNot) {
  const DeviceComm c = commOf(2);
  const CommFacts f = factsOf(c);
  const Call call{64 * KiB, true};  // 4096 vectors
  const OneShotCall geo = oneShotGeometry(f, tpcommAlgoOneShot, false, call.bytes, 65536, 8);
  EXPECT_TRUE(leanFits(geo, 8, 512, call));  // exactly one vector per thread
  EXPECT_FALSE(leanFits(geo, 8, 480, call));
  // A push batch of 4 gives a quarter of the threads: the general kernel's batch loop is needed.
  LaunchKnobs k;
  k.push_batch = 4;
  EXPECT_FALSE(leanCall(c, 64 * KiB, true, 1 * MiB, k));
}

TEST(LeanChoice, ExactlyTheCallsTheLeanKernelCovers) {
  // The lean kernel (one step, thread t of block b takes vector b*per + t when t < per) covers
  // the message exactly when leanFits accepts the call.
  const DeviceComm c = commOf(2, 1 * MiB);  // 512 KiB per source: 32768 vectors
  const CommFacts f = factsOf(c);
  const size_t full = slotCapacity(c).oneshot_step_bytes / kVecBytes;
  ASSERT_EQ(full, 32768u);
  for (size_t nvec : {size_t{1}, size_t{64}, size_t{1000}, size_t{32768}, size_t{32769}})
    for (unsigned grid : {1u, 8u, 64u})
      for (int threads : {64, 512}) {
        const Call call{nvec * kVecBytes, true};
        const int blocks = static_cast<int>(grid);
        const OneShotCall k = oneShotCall(full, 0, nvec, grid);
        EXPECT_EQ(oneShotGeometry(f, tpcommAlgoOneShot, false, call.bytes, 0, blocks).per, k.per);
        std::vector<int> seen(nvec, 0);
        for (unsigned b = 0; b < grid; ++b)
          for (size_t t = 0; t < static_cast<size_t>(threads); ++t)
            if (t < k.per && b * k.per + t < nvec) ++seen[b * k.per + t];
        bool covered = true;
        for (int n : seen) covered = covered && n == 1;
        EXPECT_EQ(leanFits(k, blocks, threads, call), k.nsteps == 1 && covered)
            << nvec << " vectors, " << grid << " x " << threads;
      }
}

TEST(LeanChoice, OnlyTheOneShotsOfTheSentinelProtocol) {
  DeviceComm c = commOf(2);
  c.host_slot_bytes = 4 * MiB;
  c.out_slot_bytes = 1 * MiB;
  c.hs_slot_bytes = kHostSentinelSlotBytes;
  for (int algo : {tpcommAlgoTwoShot, tpcommAlgoHostTwoShot, tpcommAlgoHostBulk}) {
    const CallPlan p = planCall(factsOf(c, algo), Call{4 * KiB, true});
    EXPECT_TRUE(isKernelVariant(p.variant)) << tpcommAlgoName(algo);
    EXPECT_FALSE(lean(p.variant)) << tpcommAlgoName(algo);
  }
  // host_oneshot with the sentinel protocol in host memory runs it as the peer-memory one-shot
  // does: single steps of whole aligned vectors, a vector per thread at most; with LL packets
  // (the knob off) never.
  const CommFacts f = factsOf(c, tpcommAlgoHostOneShot);
  EXPECT_EQ(planCall(f, Call{4 * KiB, true}).variant, tpcommVariantHostOneShotSentinelLean);
  EXPECT_EQ(planCall(f, Call{4 * KiB, false}).variant, tpcommVariantHostOneShotSentinel);
  EXPECT_EQ(planCall(f, Call{4 * KiB + 2, true}).variant, tpcommVariantHostOneShotSentinel);
  LaunchKnobs ll;
  ll.host_sentinel = false;
  EXPECT_EQ(planCall(factsOf(c, tpcommAlgoHostOneShot, ll), Call{4 * KiB, true}).variant,
            tpcommVariantHostOneShotLL);
}

// The geometry the planner hands the one-shot kernels (oneShotGeometry): each transport's region of
// a slot, as the kernels' slotVecs<Proto> gives it (peer memory: a 16-byte entry per vector and a
// region per source; LL: two entries per vector; bulk: the whole outbox slot is ours), shortened
// by the step knob, with the grid's share; nothing for the other algorithms.
TEST(OneShotGeometry, EachTransportsRegion) {
  for (int world = 2; world <= 8; ++world) {
    DeviceComm c = commOf(world);
    c.host_slot_bytes = 4 * MiB;
    c.out_slot_bytes = 1 * MiB;
    struct Want {
      int algo;
      size_t region;
    };
    const Want wants[] = {
        {tpcommAlgoOneShot, 16 * MiB / kVecBytes / world},
        {tpcommAlgoHostOneShot, 4 * MiB / (2 * kVecBytes) / world},
        {tpcommAlgoHostBulk, 1 * MiB / kVecBytes},
    };
    for (const Want& w : wants) {
      SCOPED_TRACE("world " + std::to_string(world) + ", algo " + std::to_string(w.algo));
      const CommFacts f = factsOf(c, w.algo);
      OneShotCall k = oneShotGeometry(f, w.algo, false, 64 * KiB, 0, 5);  // steps: the region
      EXPECT_EQ(k.region, w.region);
      EXPECT_EQ(k.nsteps, 1u);
      EXPECT_EQ(k.per, (64 * KiB / kVecBytes + 4) / 5);
      // A message of three regions and a bit takes four steps; a block's share is of a region.
      const size_t bytes = 3 * w.region * kVecBytes + 16;
      k = oneShotGeometry(f, w.algo, false, bytes, 0, 5);
      EXPECT_EQ(k.nsteps, 4u);
      EXPECT_EQ(k.per, (w.region + 4) / 5);
      // The step knob shortens steps below the region.
      k = oneShotGeometry(f, w.algo, false, bytes, 1000, 5);
      EXPECT_EQ(k.region, 1000u);
      EXPECT_EQ(k.nsteps, (3 * w.region + 1 + 999) / 1000);
    }
  }
}

// The host sentinel inboxes: a region per source of the fixed 1 MiB slot, so 512 KiB at world 2
// is one step and one more vector is two (the planner then takes LL packets instead).
TEST(OneShotGeometry, HostSentinelRegion) {
  for (int world = 2; world <= 8; ++world) {
    DeviceComm c = commOf(world);
    c.host_slot_bytes = 4 * MiB;
    c.hs_slot_bytes = kHostSentinelSlotBytes;
    const size_t region = kHostSentinelSlotBytes / kVecBytes / world;
    EXPECT_EQ(slotCapacity(c).host_sentinel_step_bytes, region * kVecBytes);
    const CommFacts f = factsOf(c, tpcommAlgoHostOneShot);
    OneShotCall k = oneShotGeometry(f, tpcommAlgoHostOneShot, true, region * kVecBytes, 0, 4);
    EXPECT_EQ(k.region, region) << "world " << world;
    EXPECT_EQ(k.nsteps, 1u) << "world " << world;
    EXPECT_EQ(
        oneShotGeometry(f, tpcommAlgoHostOneShot, true, (region + 1) * kVecBytes, 0, 4).nsteps, 2u)
        << "world " << world;
    // So the planner takes LL packets for the larger call.
    EXPECT_EQ(planCall(f, Call{(region + 1) * kVecBytes, true}).variant, tpcommVariantHostOneShotLL)
        << "world " << world;
  }
  DeviceComm c = commOf(2);
  c.hs_slot_bytes = kHostSentinelSlotBytes;
  EXPECT_EQ(slotCapacity(c).host_sentinel_step_bytes,
            512 * KiB);  // what plan/policy.cc's host table counts on
}

TEST(OneShotGeometry, PartialVectorsAndOtherAlgorithms) {
  const DeviceComm c = commOf(2);
  const CommFacts f = factsOf(c);
  // 14 bytes: one (partial) vector, which the general kernel handles.
  OneShotCall k = oneShotGeometry(f, tpcommAlgoOneShot, false, 14, 65536, 1);
  EXPECT_EQ(k.nsteps, 1u);
  EXPECT_EQ(k.per, 1u);
  for (int algo : {tpcommAlgoTwoShot, tpcommAlgoHostTwoShot, tpcommAlgoIsland}) {
    k = oneShotGeometry(f, algo, false, 64 * KiB, 0, 4);
    EXPECT_EQ(k.region + k.nsteps + k.per, 0u) << "algo " << algo;
  }
}

}  // namespace
}  // namespace tpcomm
