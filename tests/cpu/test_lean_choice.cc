// Which one-shot calls run the lean kernel (oneShotLeanFits, src/kernels/launch.cu): exactly the
// single-step calls of whole, aligned vectors with at most one vector per thread. The lean
// kernel has no step loop, no tail path and no batch loop, so a call outside these bounds that
// reached it would silently lose data: the boundaries are tested on both sides.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/algo_launch.h"
#include "kernels/oneshot_layout.h"
#include "plan/grid.h"
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

// The launch arguments tpcommAllReduce would build for a one-shot call of `bytes` in `dt`, with
// the default knobs and steps of `step_bytes` (the communicator's default: 1 MiB).
LaunchArgs argsOf(const DeviceComm& c, size_t bytes, tpcommDataType_t dt = tpcommBfloat16,
                  size_t step_bytes = 1 * MiB, const LaunchKnobs& k = LaunchKnobs{}) {
  const size_t step = std::min(step_bytes, oneShotStepBytes(c));
  const GridPlan g = planGrid(tpcommAlgoOneShot, bytes, step, c.world, k);
  LaunchArgs a{};
  a.algo = tpcommAlgoOneShot;
  a.blocks = g.blocks;
  a.threads = g.threads;
  a.push_batch = g.push_batch;
  a.dtype = dt;
  a.count = bytes / dtypeSize(dt);
  a.chunk_vecs = step / kVecBytes;
  return a;
}

TEST(LeanChoice, EverySingleStepPolicySizeFitsAtEveryWorld) {
  // The default grid gives a thread per vector up to 128 blocks of 512 threads (1 MiB), which is
  // also the default step: every one-shot call the policies make up to 1 MiB runs lean.
  for (int world = 2; world <= 8; ++world) {
    const DeviceComm c = commOf(world);
    for (size_t bytes = 16; bytes <= 1 * MiB; bytes *= 2)
      for (tpcommDataType_t dt : {tpcommFloat32, tpcommFloat16, tpcommBfloat16})
        EXPECT_TRUE(oneShotLeanFits(c, argsOf(c, bytes, dt), true))
            << bytes << " bytes, world " << world << ", dtype " << dt;
  }
}

TEST(LeanChoice, MultiStepCallsDoNot) {
  const DeviceComm c = commOf(2);
  EXPECT_FALSE(oneShotLeanFits(c, argsOf(c, 2 * MiB), true));
  EXPECT_FALSE(oneShotLeanFits(c, argsOf(c, 1 * MiB + 16), true));
  // The step bounds it, not only the slot: 64 KiB steps make a 128 KiB call two steps.
  EXPECT_TRUE(oneShotLeanFits(c, argsOf(c, 64 * KiB, tpcommBfloat16, 64 * KiB), true));
  EXPECT_FALSE(oneShotLeanFits(c, argsOf(c, 64 * KiB + 16, tpcommBfloat16, 64 * KiB), true));
  // A small slot bounds it too (a source's region is slot / world): 64 KiB slots at world 4 hold
  // 16 KiB per source.
  const DeviceComm small = commOf(4, 64 * KiB);
  EXPECT_TRUE(oneShotLeanFits(small, argsOf(small, 16 * KiB), true));
  EXPECT_FALSE(oneShotLeanFits(small, argsOf(small, 16 * KiB + 16), true));
}

TEST(LeanChoice, PartialVectorsAndUnalignedBuffersDoNot) {
  const DeviceComm c = commOf(2);
  EXPECT_FALSE(oneShotLeanFits(c, argsOf(c, 4 * KiB), false));  // unaligned buffers
  LaunchArgs a = argsOf(c, 4 * KiB);
  a.count += 1;  // one bf16 element past a whole vector
  EXPECT_FALSE(oneShotLeanFits(c, a, true));
  a.count = 7;  // less than one vector
  EXPECT_FALSE(oneShotLeanFits(c, a, true));
  a.count = 0;
  EXPECT_FALSE(oneShotLeanFits(c, a, true));
}

TEST(LeanChoice, MoreThanOneVectorPerThreadDoesNot) {
  const DeviceComm c = commOf(2);
  LaunchArgs a = argsOf(c, 64 * KiB);  // 4096 vectors
  a.blocks = 8;
  a.threads = 512;  // exactly one vector per thread
  EXPECT_TRUE(oneShotLeanFits(c, a, true));
  a.threads = 480;
  EXPECT_FALSE(oneShotLeanFits(c, a, true));
  // A push batch of 4 gives a quarter of the threads: the general kernel's batch loop is needed.
  LaunchKnobs k;
  k.push_batch = 4;
  EXPECT_FALSE(oneShotLeanFits(c, argsOf(c, 64 * KiB, tpcommBfloat16, 1 * MiB, k), true));
}

TEST(LeanChoice, ExactlyTheCallsTheLeanKernelCovers) {
  // The lean kernel (one step, thread t of block b takes vector b*per + t when t < per) covers
  // the message exactly when oneShotLeanFits accepts the call.
  const DeviceComm c = commOf(2, 1 * MiB);  // 512 KiB per source: 32768 vectors
  const size_t full = oneShotStepBytes(c) / kVecBytes;
  ASSERT_EQ(full, 32768u);
  for (size_t nvec : {size_t{1}, size_t{64}, size_t{1000}, size_t{32768}, size_t{32769}})
    for (unsigned grid : {1u, 8u, 64u})
      for (int threads : {64, 512}) {
        LaunchArgs a{};
        a.algo = tpcommAlgoOneShot;
        a.dtype = tpcommFloat32;
        a.count = nvec * 4;
        a.blocks = static_cast<int>(grid);
        a.threads = threads;
        const OneShotCall k = oneShotCall(full, 0, nvec, grid);
        std::vector<int> seen(nvec, 0);
        for (unsigned b = 0; b < grid; ++b)
          for (size_t t = 0; t < static_cast<size_t>(threads); ++t)
            if (t < k.per && b * k.per + t < nvec) ++seen[b * k.per + t];
        bool covered = true;
        for (int n : seen) covered = covered && n == 1;
        EXPECT_EQ(oneShotLeanFits(c, a, true), k.nsteps == 1 && covered)
            << nvec << " vectors, " << grid << " x " << threads;
      }
}

TEST(LeanChoice, OnlyTheOneShotsOfTheSentinelProtocol) {
  DeviceComm c = commOf(2);
  c.host_slot_bytes = 4 * MiB;
  c.hs_slot_bytes = kHostSentinelSlotBytes;
  for (int algo : {tpcommAlgoTwoShot, tpcommAlgoHostOneShot, tpcommAlgoHostTwoShot,
                   tpcommAlgoHostBulk, tpcommAlgoIsland, tpcommAlgoNccl}) {
    LaunchArgs a = argsOf(c, 4 * KiB);
    a.algo = algo;
    EXPECT_FALSE(oneShotLeanFits(c, a, true)) << tpcommAlgoName(algo);
  }
  // host_oneshot with the sentinel protocol in host memory runs it as the peer-memory one-shot
  // does: single steps of whole aligned vectors, a vector per thread at most.
  LaunchArgs a = argsOf(c, 4 * KiB);
  a.algo = tpcommAlgoHostOneShot;
  a.host_sentinel = true;
  a.chunk_vecs = 0;
  EXPECT_TRUE(oneShotLeanFits(c, a, true));
  EXPECT_FALSE(oneShotLeanFits(c, a, false));
  a.count = 4 * KiB / dtypeSize(a.dtype) + 1;  // a partial vector
  EXPECT_FALSE(oneShotLeanFits(c, a, true));
}

// The geometry the host hands the one-shot kernels (oneShotGeometry): each transport's region of
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
      LaunchArgs a = argsOf(c, 64 * KiB);
      a.algo = w.algo;
      a.blocks = 5;
      a.chunk_vecs = 0;  // the whole region
      OneShotCall k = oneShotGeometry(c, a);
      EXPECT_EQ(k.region, w.region);
      EXPECT_EQ(k.nsteps, 1u);
      EXPECT_EQ(k.per, (64 * KiB / kVecBytes + 4) / 5);
      // A message of three regions and a bit takes four steps; a block's share is of a region.
      a.count = (3 * w.region * kVecBytes + 16) / dtypeSize(a.dtype);
      k = oneShotGeometry(c, a);
      EXPECT_EQ(k.nsteps, 4u);
      EXPECT_EQ(k.per, (w.region + 4) / 5);
      // The step knob shortens steps below the region.
      a.chunk_vecs = 1000;
      k = oneShotGeometry(c, a);
      EXPECT_EQ(k.region, 1000u);
      EXPECT_EQ(k.nsteps, (3 * w.region + 1 + 999) / 1000);
    }
  }
}

// The host sentinel inboxes: a region per source of the fixed 1 MiB slot, so 512 KiB at world 2
// is one step and one more vector is two (the host then takes LL packets instead: allreduce.cc).
TEST(OneShotGeometry, HostSentinelRegion) {
  for (int world = 2; world <= 8; ++world) {
    DeviceComm c = commOf(world);
    c.host_slot_bytes = 4 * MiB;
    c.hs_slot_bytes = kHostSentinelSlotBytes;
    const size_t region = kHostSentinelSlotBytes / kVecBytes / world;
    EXPECT_EQ(hostSentinelStepBytes(c), region * kVecBytes);
    LaunchArgs a = argsOf(c, 64 * KiB);
    a.algo = tpcommAlgoHostOneShot;
    a.host_sentinel = true;
    a.chunk_vecs = 0;
    a.count = region * kVecBytes / dtypeSize(a.dtype);
    OneShotCall k = oneShotGeometry(c, a);
    EXPECT_EQ(k.region, region) << "world " << world;
    EXPECT_EQ(k.nsteps, 1u) << "world " << world;
    a.count += kVecBytes / dtypeSize(a.dtype);
    EXPECT_EQ(oneShotGeometry(c, a).nsteps, 2u) << "world " << world;
  }
  DeviceComm c = commOf(2);
  c.hs_slot_bytes = kHostSentinelSlotBytes;
  EXPECT_EQ(hostSentinelStepBytes(c), 512 * KiB);  // what plan/policy.cc's host table counts on
}

TEST(OneShotGeometry, PartialVectorsAndOtherAlgorithms) {
  const DeviceComm c = commOf(2);
  LaunchArgs a = argsOf(c, 64 * KiB);
  a.dtype = tpcommFloat16;
  a.count = 7;  // 14 bytes: one (partial) vector, which the general kernel handles
  a.blocks = 1;
  OneShotCall k = oneShotGeometry(c, a);
  EXPECT_EQ(k.nsteps, 1u);
  EXPECT_EQ(k.per, 1u);
  for (int algo : {tpcommAlgoTwoShot, tpcommAlgoHostTwoShot, tpcommAlgoIsland}) {
    a.algo = algo;
    k = oneShotGeometry(c, a);
    EXPECT_EQ(k.region + k.nsteps + k.per, 0u) << "algo " << algo;
  }
}

}  // namespace
}  // namespace tpcomm
