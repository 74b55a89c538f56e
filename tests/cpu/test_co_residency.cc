// Ranks sharing a GPU (src/plan/co_residency.cc, the planner's use of it, comm/machine_view.cc's
// agreement): every grid is capped at floor(SMs * blocks per SM / (ranks on the GPU * grids per
// rank)) per variant and thread count, the same on every rank, whatever the knobs ask; ranks with a
// GPU each keep their grids; Explain says when the cap cut a grid. Occupancy numbers are fake
// (filled from CUDA at init on a real GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/call_common.h"
#include "comm/comm.h"
#include "comm/machine_view.h"
#include "comm/rank_info.h"
#include "comm/registry.h"
#include "plan/co_residency.h"
#include "plan/fused_plan.h"
#include "plan/planner.h"
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;
constexpr const char* kNote = "capped at ";  // coResidentNote

// An H200-like GPU: 132 SMs, 2048 threads and 32 blocks per SM; the fused kernels hold a row in
// registers (one block of 256+ threads per SM), the lean one-shot is lighter than the general one.
VariantOccupancy h200Like(int sms = 132, bool pdl = true) {
  VariantOccupancy o{};
  o.sms = static_cast<uint16_t>(sms);
  o.pdl = pdl ? 1 : 0;
  for (int v = 0; v < tpcommNumVariants; ++v)
    for (int s = 0; s < kThreadSteps; ++s) {
      const int threads = 32 * (s + 1);
      int n = std::min(32, 2048 / threads);
      if (v == tpcommVariantP2pOneShot) n = std::min(n, 3);  // registers
      if (v >= tpcommVariantFusedP2pOneShot && v <= tpcommVariantFusedHostOneShotFp8)
        n = threads >= 256 ? 1 : 2;
      o.blocks_per_sm[v][s] = static_cast<uint8_t>(n);
    }
  return o;
}

GridCaps oneGpu(int ranks, const VariantOccupancy& o = h200Like()) {
  return gridCapsOf({GpuShare{o, ranks}});
}

TEST(CoResidency, CapIsBlockSlotsOverResidentGrids) {
  EXPECT_EQ(coResidentBlocks(132, 4, 4, false), 132);  // 528 slots / 4 grids
  EXPECT_EQ(coResidentBlocks(132, 4, 4, true), 66);    // and the next call's grid under PDL
  EXPECT_EQ(coResidentBlocks(132, 3, 8, true), 24);    // floor(396 / 16)
  EXPECT_EQ(coResidentBlocks(132, 1, 3, true), 22);
  // Never 0: a GPU too small for every grid still launches one block per rank.
  EXPECT_EQ(coResidentBlocks(2, 1, 8, true), 1);
  EXPECT_EQ(coResidentBlocks(0, 0, 2, false), 1);
}

TEST(CoResidency, CapsPerVariantAndThreadCount) {
  const GridCaps c = oneGpu(4);
  ASSERT_TRUE(c.any());
  EXPECT_EQ(c.ranks_per_gpu, 4);
  EXPECT_EQ(c.capFor(tpcommVariantP2pTwoShot, 512), 66);   // 132 * 4 / 8
  EXPECT_EQ(c.capFor(tpcommVariantP2pTwoShot, 256), 132);  // 132 * 8 / 8
  EXPECT_EQ(c.capFor(tpcommVariantP2pOneShot, 512), 49);   // 132 * 3 / 8
  EXPECT_EQ(c.capFor(tpcommVariantFusedP2pOneShot, 512), 16);
  EXPECT_EQ(c.capFor(tpcommVariantFusedP2pOneShot, 128), 33);
  EXPECT_EQ(c.capFor(tpcommVariantP2pTwoShot, 500), 66);  // rounded up to whole warps
  // Without PDL a rank has one grid resident at a time.
  EXPECT_EQ(oneGpu(4, h200Like(132, false)).capFor(tpcommVariantP2pTwoShot, 512), 132);
}

TEST(CoResidency, GpusWithOneRankImposeNothing) {
  EXPECT_FALSE(gridCapsOf({GpuShare{h200Like(), 1}, GpuShare{h200Like(), 1}}).any());
  EXPECT_EQ(gridCapsOf({GpuShare{h200Like(), 1}}).capFor(tpcommVariantP2pTwoShot, 512), 0);
  // Three ranks on two GPUs: the shared GPU's caps, for every rank; a small GPU with one rank
  // does not lower them.
  const GridCaps c = gridCapsOf({GpuShare{h200Like(132), 2}, GpuShare{h200Like(8), 1}});
  EXPECT_EQ(c.ranks_per_gpu, 2);
  EXPECT_EQ(c.capFor(tpcommVariantP2pTwoShot, 512), 132);
  // Two shared GPUs of different sizes: the least of their caps.
  const GridCaps m = gridCapsOf({GpuShare{h200Like(132), 2}, GpuShare{h200Like(40), 3}});
  EXPECT_EQ(m.ranks_per_gpu, 3);
  EXPECT_EQ(m.capFor(tpcommVariantP2pTwoShot, 512), 26);  // 40 * 4 / 6
}

// Every grid the planner gives, over worlds, transports, forced algorithms and sizes, fits its
// variant's cap at its thread count; where the cap cut it, the reason says so; where it did not,
// the plan is exactly the plan without caps.
TEST(CoResidency, EveryPlannedGridFitsItsCap) {
  for (int world = 2; world <= 8; ++world) {
    const GridCaps caps = oneGpu(world);
    const std::vector<std::pair<Fabric, int>> runs = {
        {Fabric::kNvlink, -1},
        {Fabric::kNvlink, tpcommAlgoOneShot},
        {Fabric::kNvlink, tpcommAlgoTwoShot},
        {Fabric::kNvlink, islandWorld(world) ? tpcommAlgoIsland : tpcommAlgoOneShot},
        {Fabric::kHost, -1},
        {Fabric::kHost, tpcommAlgoHostOneShot},
        {Fabric::kHost, tpcommAlgoHostTwoShot},
        {Fabric::kHost, tpcommAlgoHostBulk}};
    for (const auto& [fabric, algo] : runs) {
      CommFacts f = factsFor(world, fabric, algo);
      f.nccl_available = false;
      for (size_t bytes = 16; bytes <= 64 * MiB; bytes = bytes * 2 + 16) {
        const CallPlan free = planCall(f, CallArgs{bytes, true});
        CommFacts shared = f;
        shared.grid_caps = &caps;
        const CallPlan p = planCall(shared, CallArgs{bytes, true});
        const std::string what = "world " + std::to_string(world) + " " + fabricName(fabric) +
                                 " algo " + std::to_string(algo) + " " + std::to_string(bytes) +
                                 " B: " + p.decision.reason;
        ASSERT_EQ(p.decision.error, tpcommSuccess) << what;
        if (!isKernelVariant(p.variant)) continue;
        EXPECT_LE(p.grid.blocks, caps.capFor(p.variant, p.grid.threads)) << what;
        const bool noted = p.decision.reason.find(kNote) != std::string::npos;
        EXPECT_EQ(noted, p.grid.co_resident_capped) << what;
        if (!p.grid.co_resident_capped) {
          EXPECT_EQ(p.grid.blocks, free.grid.blocks) << what;
          EXPECT_EQ(p.grid.threads, free.grid.threads) << what;
          EXPECT_EQ(p.variant, free.variant) << what;
          EXPECT_EQ(p.decision.reason, free.decision.reason) << what;
        } else {
          EXPECT_LT(p.grid.blocks, free.grid.blocks) << what;
        }
      }
    }
  }
}

// A 4 MiB two-shot at world 4 asks for 128 blocks of 512 threads; 4 ranks on the GPU with PDL
// fit 66. Neither maxBlocks nor a knob that asks for more blocks can exceed that.
TEST(CoResidency, KnobsCannotExceedTheCap) {
  const GridCaps caps = oneGpu(4);
  CommFacts f = factsFor(4, Fabric::kNvlink, tpcommAlgoTwoShot);
  f.grid_caps = &caps;
  CallPlan p = planCall(f, CallArgs{4 * MiB, true});
  EXPECT_EQ(p.grid.blocks, 66);
  EXPECT_EQ(p.grid.threads, 512);
  EXPECT_EQ(p.decision.reason.rfind("capped at 66 blocks: 4 ranks share a GPU; ", 0), 0u)
      << p.decision.reason;
  // maxBlocks 1024 asks for 512 blocks of 128 threads: re-shaped down to 66 of 512.
  f.knobs.max_blocks = 1024;
  EXPECT_EQ(planCall(f, CallArgs{4 * MiB, true}).grid.blocks, 66);
  // And 16 bytes a block asks for 1024 blocks of 64 threads: the same.
  ASSERT_EQ(parseLaunchKnobs("block_bytes=16", &f.knobs), "");
  p = planCall(f, CallArgs{4 * MiB, true});
  EXPECT_EQ(p.grid.blocks, 66);
  EXPECT_TRUE(p.grid.co_resident_capped);
  // A knob below the cap is kept, and nothing is said.
  f.knobs = LaunchKnobs{};
  f.knobs.max_blocks = 8;
  p = planCall(f, CallArgs{4 * MiB, true});
  EXPECT_EQ(p.grid.blocks, 8);
  EXPECT_EQ(p.decision.reason.find(kNote), std::string::npos) << p.decision.reason;
}

// A cap that is lower at more threads: fewer blocks take more threads each, so the grid is
// re-shaped until it fits the cap of its own thread count.
TEST(CoResidency, GridIsReshapedUntilItFitsAtItsThreadCount) {
  VariantOccupancy o = h200Like();
  for (int s = 0; s < kThreadSteps; ++s) o.blocks_per_sm[tpcommVariantP2pTwoShot][s] = 0;
  o.blocks_per_sm[tpcommVariantP2pTwoShot][3] = 32;  // 128 threads: 132 * 32 / 4 = 1056
  o.blocks_per_sm[tpcommVariantP2pTwoShot][7] = 2;   // 256 threads: 66
  const GridCaps caps = oneGpu(2, o);                // other thread counts: 1 block
  CommFacts f = factsFor(2, Fabric::kNvlink, tpcommAlgoTwoShot);
  EXPECT_FALSE(planCall(f, CallArgs{512 * KiB, true}).grid.co_resident_capped);
  f.grid_caps = &caps;
  const CallPlan fits = planCall(f, CallArgs{512 * KiB, true});
  EXPECT_EQ(fits.grid.threads, 128);
  EXPECT_EQ(fits.grid.blocks, 128);
  EXPECT_FALSE(fits.grid.co_resident_capped);
  const CallPlan cut = planCall(f, CallArgs{1 * MiB, true});  // 128 x 256 asked, 66 fit
  EXPECT_LE(cut.grid.blocks, caps.capFor(cut.variant, cut.grid.threads));
  EXPECT_TRUE(cut.grid.co_resident_capped);
  EXPECT_EQ(cut.grid.blocks, 1);  // 66 blocks take 512 threads, where only 1 fits
}

// The lean and the general one-shot share a grid plan: the cap is the lower of the two, so that
// whichever the lean check picks fits.
TEST(CoResidency, OneShotCapCoversTheLeanAndTheGeneralKernel) {
  const GridCaps caps = oneGpu(8);
  CommFacts f = factsFor(8, Fabric::kNvlink, tpcommAlgoOneShot);
  f.grid_caps = &caps;
  // 128 KiB asks for 64 blocks of 128 threads; 24 of 352 fit the general kernel, 41 the lean one.
  const CallPlan lean = planCall(f, CallArgs{128 * KiB, true});
  ASSERT_EQ(lean.variant, tpcommVariantP2pOneShotLean) << lean.decision.reason;
  EXPECT_TRUE(lean.grid.co_resident_capped);
  EXPECT_EQ(lean.grid.threads, 352);
  EXPECT_EQ(lean.grid.blocks, caps.capFor(tpcommVariantP2pOneShot, 352));
  EXPECT_EQ(lean.grid.blocks, 24);
  EXPECT_EQ(caps.capFor(tpcommVariantP2pOneShotLean, 352), 41);
}

TEST(CoResidency, FusedGridIsCappedForItsKernel) {
  const GridCaps caps = oneGpu(4);
  CommFacts f = factsFor(4, Fabric::kNvlink);
  const FusedCallArgs call{256, 4096, tpcommBfloat16, true, false};
  FusedPlan p = planFusedCall(f, call);
  ASSERT_EQ(p.variant, tpcommVariantFusedP2pOneShot) << p.reason;
  EXPECT_EQ(p.blocks, 128);  // without sharing: a block per row up to the default
  f.grid_caps = &caps;
  p = planFusedCall(f, call);
  EXPECT_EQ(p.threads, 512);
  EXPECT_EQ(p.blocks, 16);  // 132 x 1 / (4 ranks x 2 grids)
  EXPECT_NE(p.reason.find("; capped at 16 blocks: 4 ranks share a GPU"), std::string::npos)
      << p.reason;
  f.knobs.max_blocks = 512;
  EXPECT_EQ(planFusedCall(f, call).blocks, 16);
  // Few rows: fewer blocks than the cap, nothing said.
  p = planFusedCall(f, FusedCallArgs{4, 4096, tpcommBfloat16, true, false});
  EXPECT_EQ(p.blocks, 4);
  EXPECT_EQ(p.reason.find(kNote), std::string::npos) << p.reason;
}

RankInfo rankOn(const char* bus, const VariantOccupancy& o) {
  RankInfo i;
  memset(&i, 0, sizeof(i));
  snprintf(i.pci_bus_id_norm, sizeof(i.pci_bus_id_norm), "%s", bus);
  i.view.occupancy = o;
  return i;
}

bool sameCaps(const GridCaps& a, const GridCaps& b) {
  return a.ranks_per_gpu == b.ranks_per_gpu && memcmp(a.blocks, b.blocks, sizeof(a.blocks)) == 0;
}

// Every rank derives the caps from the same handles (its own index plays no part), counting the
// ranks per GPU by bus id whichever process they are in.
TEST(CoResidency, RanksAgreeOnTheCapsFromTheirHandles) {
  const char* a = "0000:18:00.0";
  const char* b = "0000:2a:00.0";
  // World 3 on 2 GPUs, round robin: ranks 0 and 2 share GPU a.
  std::vector<RankInfo> all = {rankOn(a, h200Like()), rankOn(b, h200Like()), rankOn(a, h200Like())};
  const GridCaps c = agreeGridCaps(all.data(), 3);
  EXPECT_TRUE(sameCaps(c, oneGpu(2))) << c.ranks_per_gpu;
  // Every GPU its own: nothing capped.
  all[2] = rankOn("0000:3b:00.0", h200Like());
  EXPECT_FALSE(agreeGridCaps(all.data(), 3).any());
  // Two ranks of one GPU seeing it differently (another MPS limit in the other process): the
  // smaller view counts, on both.
  all = {rankOn(a, h200Like(132)), rankOn(a, h200Like(66))};
  EXPECT_TRUE(sameCaps(agreeGridCaps(all.data(), 2), oneGpu(2, h200Like(66))));
  std::swap(all[0], all[1]);
  EXPECT_TRUE(sameCaps(agreeGridCaps(all.data(), 2), oneGpu(2, h200Like(66))));
}

// Clusters for the fused call's rows only where every rank's GPU launches them (a row split
// differently on one rank would add its sum of squares in another order).
TEST(CoResidency, ClustersOnlyWhereEveryRankHasThem) {
  VariantOccupancy with = h200Like(), without = h200Like();
  with.clusters = 1;
  without.clusters = 0;
  std::vector<RankInfo> all = {rankOn("0000:18:00.0", with), rankOn("0000:2a:00.0", with)};
  EXPECT_TRUE(agreeClusters(all.data(), 2));
  all[1] = rankOn("0000:2a:00.0", without);
  EXPECT_FALSE(agreeClusters(all.data(), 2));
  std::swap(all[0], all[1]);
  EXPECT_FALSE(agreeClusters(all.data(), 2));
  EXPECT_TRUE(agreeClusters(all.data() + 1, 1));
}

// tpcommCommExplain and tpcommCommExplainAddRmsNorm say when the cap cut the grid (a registered
// communicator object: the planner needs no GPU).
TEST(CoResidency, ExplainSaysTheGridWasCapped) {
  tpcommComm c;
  c.state = CommState::kReady;
  c.world = 4;
  c.fabric = Fabric::kNvlink;
  c.settings.algo = -1;
  DeviceComm d{};
  d.world = 4;
  d.slot_bytes = 16 * MiB;
  c.slots = slotCapacity(d);
  c.grid_caps = oneGpu(4);
  registerComm(&c);
  tpcommCallInfo_t info{};
  EXPECT_EQ(tpcommCommExplain(&c, 2 * MiB, tpcommBfloat16, &info), tpcommSuccess)
      << tpcommGetLastError();
  EXPECT_EQ(info.blocks, c.grid_caps.capFor(static_cast<tpcommVariant_t>(info.variant), 512));
  EXPECT_NE(std::string(info.reason).find("blocks: 4 ranks share a GPU"), std::string::npos)
      << info.reason;
  tpcommRmsNormParams_t prm = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  EXPECT_EQ(tpcommCommExplainAddRmsNorm(&c, 256, 4096, tpcommBfloat16, &prm, &info), tpcommSuccess)
      << tpcommGetLastError();
  EXPECT_EQ(info.blocks, 16);
  EXPECT_NE(std::string(info.reason).find("capped at 16 blocks: 4 ranks share a GPU"),
            std::string::npos)
      << info.reason;
  // Over host memory at world 8, 64 MiB: the policy's reason (NCCL measured faster, but none)
  // fills the struct's reason on its own; the cap is said first.
  static char host_memory;  // the planner only asks whether the host transport exists
  c.world = d.world = 8;
  c.fabric = Fabric::kHost;
  c.host_seg.dev = &host_memory;
  d.host_slot_bytes = 4 * MiB;
  d.out_slot_bytes = bulkSlotBytes(d.host_slot_bytes);
  d.hs_slot_bytes = kHostSentinelSlotBytes;
  c.slots = slotCapacity(d);
  c.grid_caps = oneGpu(8);
  EXPECT_EQ(tpcommCommExplain(&c, 32 * MiB, tpcommBfloat16, &info), tpcommSuccess)
      << tpcommGetLastError();
  EXPECT_LT(info.blocks, kDefaultMaxBlocks);
  EXPECT_EQ(std::string(info.reason).rfind("capped at ", 0), 0u) << info.reason;
  EXPECT_NE(std::string(info.reason).find(" blocks: 8 ranks share a GPU; "), std::string::npos)
      << info.reason;
  EXPECT_EQ(planCall(factsOf(&c), CallArgs{64 * MiB, true}).decision.reason.substr(0, 150),
            std::string(info.reason).substr(0, 150));
  // The same communicator with a GPU per rank: today's grid.
  c.host_seg.dev = nullptr;
  c.fabric = Fabric::kNvlink;
  c.world = d.world = 4;
  c.slots = slotCapacity(d);
  c.grid_caps = GridCaps{};
  EXPECT_EQ(tpcommCommExplain(&c, 2 * MiB, tpcommBfloat16, &info), tpcommSuccess);
  EXPECT_EQ(info.blocks, kDefaultMaxBlocks);
  EXPECT_EQ(std::string(info.reason).find(kNote), std::string::npos) << info.reason;
  unregisterComm(&c);
}

}  // namespace
}  // namespace tpcomm
