// Ranks sharing a GPU (src/plan/co_residency.cc, the planner's use of it,
// comm/lifecycle/machine_view.cc's agreement): every grid is capped at floor(SMs / (ranks on the
// GPU * grids per rank)), one number for every variant and thread count, the same on every rank,
// whatever the knobs ask; ranks with a GPU each keep their grids; Explain says when the cap cut a
// grid. A model of the block scheduler shows that any mix of resident grids finds room (and the old
// per-variant rule did not). GPU facts are fake (filled from CUDA at init on a real GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/call/call_common.h"
#include "comm/comm.h"
#include "comm/lifecycle/machine_view.h"
#include "comm/lifecycle/rank_info.h"
#include "comm/lifecycle/registry.h"
#include "plan/co_residency.h"
#include "plan/fused_plan.h"
#include "plan/planner.h"
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;
constexpr const char* kNote = "capped at ";  // coResidentNote

// An H200-like GPU: 132 SMs, programmatic dependent launch.
GpuOccupancy h200Like(int sms = 132, bool pdl = true) {
  GpuOccupancy o{};
  o.sms = static_cast<uint16_t>(sms);
  o.pdl = pdl ? 1 : 0;
  return o;
}

GridCaps oneGpu(int ranks, int sms = 132, bool pdl = true) {
  return gridCapsOf({GpuShare{sms, pdl, ranks}});
}

TEST(CoResidency, CapIsSmsOverResidentGrids) {
  EXPECT_EQ(coResidentBlocks(132, 4, false), 33);  // 132 SMs / 4 grids
  EXPECT_EQ(coResidentBlocks(132, 4, true), 16);   // and the next call's grid under PDL
  EXPECT_EQ(coResidentBlocks(132, 8, true), 8);    // floor(132 / 16)
  EXPECT_EQ(coResidentBlocks(132, 3, true), 22);
  EXPECT_EQ(coResidentBlocks(132, 2, true), 33);
  // Never 0: a GPU too small for every grid still plans one block (and init refuses it: hold).
  EXPECT_EQ(coResidentBlocks(2, 8, true), 1);
  EXPECT_EQ(coResidentBlocks(0, 2, false), 1);
}

// One number for every grid: calls of different variants and thread counts are resident
// together, so no variant may take more of the GPU than another.
TEST(CoResidency, OneCapForEveryVariantAndThreadCount) {
  const GridCaps c = oneGpu(4);
  ASSERT_TRUE(c.any());
  EXPECT_TRUE(c.hold);
  EXPECT_EQ(c.ranks_per_gpu, 4);
  EXPECT_EQ(c.blocks, 16);
  // Without PDL a rank has one grid resident at a time.
  EXPECT_EQ(oneGpu(4, 132, false).blocks, 33);
}

// A GPU with fewer SMs than the grids its ranks may have resident cannot hold them at any cap.
TEST(CoResidency, HoldsOnlyWithAnSmForEveryResidentGrid) {
  EXPECT_FALSE(oneGpu(8, 15).hold);  // 16 grids
  EXPECT_TRUE(oneGpu(8, 16).hold);
  EXPECT_TRUE(oneGpu(8, 8, false).hold);
  EXPECT_FALSE(oneGpu(8, 7, false).hold);
  EXPECT_TRUE(gridCapsOf({GpuShare{4, true, 1}}).hold);  // a GPU of its own: nothing to hold
}

TEST(CoResidency, GpusWithOneRankImposeNothing) {
  EXPECT_FALSE(gridCapsOf({GpuShare{132, true, 1}, GpuShare{132, true, 1}}).any());
  EXPECT_EQ(gridCapsOf({GpuShare{132, true, 1}}).blocks, 0);
  // Three ranks on two GPUs: the shared GPU's cap, for every rank; a small GPU with one rank
  // does not lower it.
  const GridCaps c = gridCapsOf({GpuShare{132, true, 2}, GpuShare{8, true, 1}});
  EXPECT_EQ(c.ranks_per_gpu, 2);
  EXPECT_EQ(c.blocks, 33);
  // Two shared GPUs of different sizes: the least of their caps.
  const GridCaps m = gridCapsOf({GpuShare{132, true, 2}, GpuShare{40, true, 3}});
  EXPECT_EQ(m.ranks_per_gpu, 3);
  EXPECT_EQ(m.blocks, 6);  // 40 / 6
}

// A model of the block scheduler, as adversarial as the hardware's spreading: every rank's grids
// at the cap, of any mix of thread counts and registers a tpcomm kernel may have (at most 512
// threads, at most 128 registers a thread: the launch bound), each block placed on the SM after
// the last one used that has room. Whatever the order, every block finds room, because at most
// SMs blocks are resident and any one fits an SM holding none. The old rule (a cap per variant:
// SM slots of that variant's own occupancy / grids) fails the same model: small blocks of one
// rank spread over every SM, and a peer's whole-SM block finds none free.
struct SmModel {
  int regs = 65536, threads = 2048, blocks = 32;
};
struct BlockShape {
  int threads, regs;  // registers a thread
};
// Places `grids` (blocks of one shape each) in order; the count of blocks that found no room.
int unplaced(int sms, const std::vector<std::pair<int, BlockShape>>& grids) {
  std::vector<SmModel> sm(static_cast<size_t>(sms));
  int next = 0, missed = 0;
  for (const auto& [n, shape] : grids)
    for (int b = 0; b < n; ++b) {
      const int need = shape.threads * shape.regs;
      bool placed = false;
      for (int k = 0; k < sms && !placed; ++k) {
        SmModel& m = sm[static_cast<size_t>((next + k) % sms)];
        if (m.regs >= need && m.threads >= shape.threads && m.blocks >= 1) {
          m.regs -= need;
          m.threads -= shape.threads;
          m.blocks -= 1;
          next = (next + k + 1) % sms;
          placed = true;
        }
      }
      missed += placed ? 0 : 1;
    }
  return missed;
}

TEST(CoResidency, EveryResidentGridFindsRoomInAnyMix) {
  const BlockShape whole{512, 128}, quarter{128, 128}, lean{64, 40}, warp{32, 128};
  const BlockShape shapes[] = {whole, quarter, lean, warp};
  for (int ranks = 2; ranks <= 8; ++ranks) {
    const GridCaps caps = oneGpu(ranks);
    for (int order = 0; order < 64; ++order) {
      // Each rank's two resident grids; small shapes first (they spread), whole-SM blocks last.
      std::vector<std::pair<int, BlockShape>> grids;
      for (int g = 0; g < 2 * ranks; ++g)
        grids.push_back({caps.blocks, shapes[(order + g * 7 + g / 3) % 4]});
      std::stable_sort(grids.begin(), grids.end(), [](const auto& a, const auto& b) {
        return a.second.threads * a.second.regs < b.second.threads * b.second.regs;
      });
      EXPECT_EQ(unplaced(132, grids), 0) << ranks << " ranks, order " << order;
    }
  }
  // The old per-variant rule at three ranks (the first chain that hung: two ranks' two-shot grids
  // of 128-thread blocks at their own cap, floor(132 x 4 / 6) = 88, then the late rank's
  // whole-SM blocks at theirs, floor(132 x 1 / 6) = 22): no room.
  EXPECT_GT(
      unplaced(132, {{88, quarter}, {88, quarter}, {88, quarter}, {88, quarter}, {22, whole}}), 0);
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
        const CallPlan free = planCall(f, Call{bytes, true});
        CommFacts shared = f;
        shared.grid_caps = &caps;
        const CallPlan p = planCall(shared, Call{bytes, true});
        const std::string what = "world " + std::to_string(world) + " " + fabricName(fabric) +
                                 " algo " + std::to_string(algo) + " " + std::to_string(bytes) +
                                 " B: " + p.decision.reason;
        ASSERT_EQ(p.decision.error, tpcommSuccess) << what;
        if (!isKernelVariant(p.variant)) continue;
        EXPECT_LE(p.grid.blocks, caps.blocks) << what;
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
// fit 16. Neither maxBlocks nor a knob that asks for more blocks can exceed that.
TEST(CoResidency, KnobsCannotExceedTheCap) {
  const GridCaps caps = oneGpu(4);
  CommFacts f = factsFor(4, Fabric::kNvlink, tpcommAlgoTwoShot);
  f.grid_caps = &caps;
  CallPlan p = planCall(f, Call{4 * MiB, true});
  EXPECT_EQ(p.grid.blocks, 16);
  EXPECT_EQ(p.grid.threads, 512);
  EXPECT_EQ(p.decision.reason.rfind("capped at 16 blocks: 4 ranks share a GPU; ", 0), 0u)
      << p.decision.reason;
  // maxBlocks 1024 asks for 512 blocks of 128 threads: re-shaped down to 16 of 512.
  f.knobs.max_blocks = 1024;
  EXPECT_EQ(planCall(f, Call{4 * MiB, true}).grid.blocks, 16);
  // And 16 bytes a block asks for 1024 blocks of 64 threads: the same.
  ASSERT_EQ(parseLaunchKnobs("block_bytes=16", &f.knobs), "");
  p = planCall(f, Call{4 * MiB, true});
  EXPECT_EQ(p.grid.blocks, 16);
  EXPECT_TRUE(p.grid.co_resident_capped);
  // A knob below the cap is kept, and nothing is said.
  f.knobs = LaunchKnobs{};
  f.knobs.max_blocks = 8;
  p = planCall(f, Call{4 * MiB, true});
  EXPECT_EQ(p.grid.blocks, 8);
  EXPECT_EQ(p.decision.reason.find(kNote), std::string::npos) << p.decision.reason;
}

// The lean and the general one-shot share a grid plan and the cap, so whichever the lean check
// picks fits.
TEST(CoResidency, OneShotCapCoversTheLeanAndTheGeneralKernel) {
  const GridCaps caps = oneGpu(8);
  CommFacts f = factsFor(8, Fabric::kNvlink, tpcommAlgoOneShot);
  f.grid_caps = &caps;
  // 64 KiB asks for 32 blocks of 128 threads; 8 fit, of 512 threads each (a vector a thread).
  const CallPlan lean = planCall(f, Call{64 * KiB, true});
  ASSERT_EQ(lean.variant, tpcommVariantP2pOneShotLean) << lean.decision.reason;
  EXPECT_TRUE(lean.grid.co_resident_capped);
  EXPECT_EQ(lean.grid.blocks, 8);
  EXPECT_EQ(lean.grid.threads, 512);
  // Misaligned, the general kernel: the same grid.
  const CallPlan general = planCall(f, Call{64 * KiB, false});
  EXPECT_EQ(general.variant, tpcommVariantP2pOneShot) << general.decision.reason;
  EXPECT_EQ(general.grid.blocks, 8);
}

TEST(CoResidency, FusedGridIsCappedForItsKernel) {
  const GridCaps caps = oneGpu(4);
  CommFacts f = factsFor(4, Fabric::kNvlink);
  f.knobs.fused_twoshot_rows = 0;  // the push one-shot's grid (256 rows would take the two-shot)
  const Call call = fusedCall(256, 4096, tpcommBfloat16, false);
  EpiloguePlan p = planCall(f, call).epilogue;
  ASSERT_EQ(p.variant, tpcommVariantFusedP2pOneShot) << p.reason;
  EXPECT_EQ(p.blocks, 129);  // without sharing: a block per row up to the default, the check block
  f.grid_caps = &caps;
  p = planCall(f, call).epilogue;
  EXPECT_EQ(p.threads, 512);
  EXPECT_EQ(p.blocks, 16);  // 132 / (4 ranks x 2 grids): no room for the check block
  EXPECT_FALSE(p.check_block);
  EXPECT_NE(p.reason.find("; capped at 16 blocks: 4 ranks share a GPU"), std::string::npos)
      << p.reason;
  f.knobs.max_blocks = 512;
  EXPECT_EQ(planCall(f, call).epilogue.blocks, 16);
  // Few rows: fewer blocks than the cap, nothing said.
  p = planCall(f, fusedCall(4, 4096, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(p.blocks, 5);  // and the check block, within the cap
  EXPECT_TRUE(p.check_block);
  EXPECT_EQ(p.reason.find(kNote), std::string::npos) << p.reason;
}

RankInfo rankOn(const char* bus, const GpuOccupancy& o) {
  RankInfo i;
  memset(&i, 0, sizeof(i));
  snprintf(i.pci_bus_id_norm, sizeof(i.pci_bus_id_norm), "%s", bus);
  i.view.occupancy = o;
  return i;
}

bool sameCaps(const GridCaps& a, const GridCaps& b) {
  return a.ranks_per_gpu == b.ranks_per_gpu && a.blocks == b.blocks && a.hold == b.hold;
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
  EXPECT_TRUE(sameCaps(agreeGridCaps(all.data(), 2), oneGpu(2, 66)));
  std::swap(all[0], all[1]);
  EXPECT_TRUE(sameCaps(agreeGridCaps(all.data(), 2), oneGpu(2, 66)));
}

// Clusters for the fused call's rows only where every rank's GPU launches them (a row split
// differently on one rank would add its sum of squares in another order).
TEST(CoResidency, ClustersOnlyWhereEveryRankHasThem) {
  GpuOccupancy with = h200Like(), without = h200Like();
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
  EXPECT_EQ(info.blocks, c.grid_caps.blocks);
  EXPECT_NE(std::string(info.reason).find("blocks: 4 ranks share a GPU"), std::string::npos)
      << info.reason;
  tpcommRmsNormParams_t prm = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  EXPECT_EQ(tpcommCommExplainAddRmsNorm(&c, 256, 4096, tpcommBfloat16, &prm, &info), tpcommSuccess)
      << tpcommGetLastError();
  EXPECT_EQ(info.blocks, 16);
  EXPECT_NE(std::string(info.reason).find("capped at 16 blocks: 4 ranks share a GPU"),
            std::string::npos)
      << info.reason;
  // Over host memory at world 8, 64 MiB: the policy's reason (NCCL estimated faster, but none)
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
  EXPECT_EQ(planCall(factsOf(&c), Call{64 * MiB, true}).decision.reason.substr(0, 150),
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

// The fused one-shot's check block takes the cap's last slot where the rows leave one (15 rows
// under a cap of 16), and block 0 checks where they fill it (16 rows): the row grid was not cut,
// so nothing is said.
TEST(CoResidency, FusedCheckBlockTakesTheCapsLastSlot) {
  const GridCaps caps = oneGpu(4);
  ASSERT_EQ(caps.blocks, 16);
  CommFacts f = factsFor(4, Fabric::kNvlink);
  f.grid_caps = &caps;
  EpiloguePlan p = planCall(f, fusedCall(15, 4096, tpcommBfloat16, false)).epilogue;
  ASSERT_EQ(p.variant, tpcommVariantFusedP2pOneShot) << p.reason;
  EXPECT_EQ(p.blocks, 16);
  EXPECT_TRUE(p.check_block);
  EXPECT_EQ(p.reason.find(kNote), std::string::npos) << p.reason;
  p = planCall(f, fusedCall(16, 4096, tpcommBfloat16, false)).epilogue;
  EXPECT_EQ(p.blocks, 16);
  EXPECT_FALSE(p.check_block);
  EXPECT_EQ(p.reason.find(kNote), std::string::npos) << p.reason;
}

}  // namespace
}  // namespace tpcomm
