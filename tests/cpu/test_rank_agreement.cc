// Every rank decides fabric, tuning and settings from the same handles: a mismatch is refused at
// init, naming the rank and the field (ranks that disagreed would wait on each other).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/lifecycle/machine_view.h"
#include "comm/lifecycle/rank_info.h"
#include "common/error.h"
#include "plan/knobs.h"

namespace tpcomm {
namespace {

RankInfo info(int rank, int nranks, const char* bus) {
  RankInfo i;
  memset(&i, 0, sizeof(i));
  i.magic = kInfoMagic;
  i.version = kInfoVersion;
  i.rank = rank;
  i.nranks = nranks;
  i.pid = 100 + rank;  // what fillIdentity always sets (unpackHandles range-checks them)
  i.cc_major = 9;
  snprintf(i.boot_id, sizeof(i.boot_id), "boot-1");
  snprintf(i.host_id, sizeof(i.host_id), "host-1");
  snprintf(i.pci_bus_id_norm, sizeof(i.pci_bus_id_norm), "%s", bus);
  i.slot_bytes = 1 << 24;
  i.timeout_ms = 5000;
  i.algo = -1;
  return i;
}

// Rank r's view: it can reach every bus in `reach` (nvlink or not).
void see(RankInfo* i, const std::vector<const char*>& reach, bool nvlink) {
  i->view.count = 0;
  for (const char* b : reach) {
    MachineView::Gpu& g = i->view.gpus[i->view.count++];
    snprintf(g.bus, sizeof(g.bus), "%s", b);
    g.access = 1;
    g.nvlink = nvlink && strcmp(b, i->pci_bus_id_norm) != 0;
  }
}

tpcommResult_t unpack(const std::vector<RankInfo>& infos) {
  std::vector<tpcommRankHandle> h(infos.size());
  for (size_t r = 0; r < infos.size(); ++r) packHandle(infos[r], &h[r]);
  std::vector<RankInfo> out(infos.size());
  return unpackHandles(h.data(), static_cast<int>(infos.size()), out.data());
}

TEST(RankAgreement, HandlesMustMatch) {
  std::vector<RankInfo> ok = {info(0, 2, "0000:06:00.0"), info(1, 2, "0000:07:00.0")};
  EXPECT_EQ(unpack(ok), tpcommSuccess) << lastError();

  auto expectBad = [](std::vector<RankInfo> v, tpcommResult_t code, const char* word) {
    EXPECT_EQ(unpack(v), code) << word;
    EXPECT_NE(std::string(lastError()).find(word), std::string::npos) << lastError();
  };
  std::vector<RankInfo> v = ok;
  std::swap(v[0], v[1]);
  expectBad(v, tpcommInvalidArgument, "out of order");
  v = ok;
  v[1].nranks = 3;
  expectBad(v, tpcommInvalidArgument, "nranks=3");
  // Another machine is no longer refused here: comm/node/node_layout.h groups the ranks by host id
  // (tests/cpu/test_node_layout.cc).
  v = ok;
  v[1].timeout_ms = 100;
  expectBad(v, tpcommRemoteError, "timeoutMs");
  // Launch knobs shape every plan: ranks with different ones would run different kernels.
  v = ok;
  snprintf(v[1].knobs, sizeof(v[1].knobs), "block_bytes=4096");
  expectBad(v, tpcommRemoteError,
            "rank 1's launch knobs differ from rank 0's (\"block_bytes=4096\" / \"\"");
  v = ok;
  memset(v[0].knobs, 'x', sizeof(v[0].knobs));  // no NUL: a corrupt handle
  expectBad(v, tpcommInvalidArgument, "knobs is not NUL-terminated");
  v = ok;
  v[1].algo = tpcommAlgoTwoShot;
  expectBad(v, tpcommRemoteError, "algo");
  v = ok;
  v[1].magic = 0;
  expectBad(v, tpcommInvalidArgument, "bad magic");
}

TEST(RankAgreement, FabricFromEveryView) {
  std::vector<RankInfo> v = {info(0, 2, "0000:06:00.0"), info(1, 2, "0000:07:00.0")};
  bool share = true;
  std::string why;
  see(&v[0], {"0000:06:00.0", "0000:07:00.0"}, true);
  see(&v[1], {"0000:06:00.0", "0000:07:00.0"}, true);
  EXPECT_EQ(agreeFabric(v.data(), 2, &share, &why), Fabric::kNvlink);
  EXPECT_FALSE(share);
  see(&v[1], {"0000:06:00.0", "0000:07:00.0"}, false);  // one side sees PCIe only
  EXPECT_EQ(agreeFabric(v.data(), 2, &share, &why), Fabric::kPcie);
  v[1].view.gpus[0].access = 0;  // rank 1 cannot reach rank 0's GPU: no P2P at all
  EXPECT_EQ(agreeFabric(v.data(), 2, &share, &why), Fabric::kHost);
  // topo::classify's reason, over the ranks' distinct GPUs in rank order.
  EXPECT_NE(why.find("GPU 0 - GPU 1: P2P not supported"), std::string::npos) << why;
  v[1].view.gpus[0].access = 1;
  v[1].view.gpus[0].broken = 1;  // `tpcomm doctor` found the pair broken
  EXPECT_EQ(agreeFabric(v.data(), 2, &share, &why), Fabric::kHost);
  EXPECT_NE(why.find("broken"), std::string::npos) << why;
  // A GPU a rank cannot see (CUDA_VISIBLE_DEVICES): reachable by IPC, not NVLink.
  see(&v[0], {"0000:06:00.0"}, true);
  see(&v[1], {"0000:07:00.0"}, true);
  EXPECT_EQ(agreeFabric(v.data(), 2, &share, &why), Fabric::kPcie);
  // Ranks on one GPU always reach each other.
  std::vector<RankInfo> s = {info(0, 2, "0000:06:00.0"), info(1, 2, "0000:06:00.0")};
  EXPECT_EQ(agreeFabric(s.data(), 2, &share, &why), Fabric::kNvlink);
  EXPECT_TRUE(share);
}

TEST(RankAgreement, TuningOnlyWhenEveryRankLoadedTheSameTable) {
  std::vector<RankInfo> v = {info(0, 2, "a"), info(1, 2, "b")};
  EXPECT_FALSE(agreeTuning(v.data(), 2));  // none loaded
  v[0].view.tuning_hash = v[1].view.tuning_hash = 42;
  EXPECT_TRUE(agreeTuning(v.data(), 2));
  v[1].view.tuning_hash = 43;
  EXPECT_FALSE(agreeTuning(v.data(), 2));
}

// Ranks on GPUs gpu[r] of an 8-GPU two-socket PCIe box (GPUs 0-3 and 4-7 behind one switch per
// socket); every rank sees every GPU, with the path from its own.
std::vector<RankInfo> twoSocketRanks(const std::vector<int>& gpu, int cross_path = 4) {
  const int n = static_cast<int>(gpu.size());
  std::vector<RankInfo> v;
  char bus[8][16];
  for (int g = 0; g < 8; ++g) snprintf(bus[g], sizeof(bus[g]), "0000:%02x:00.0", 0x10 + g);
  for (int r = 0; r < n; ++r) {
    v.push_back(info(r, n, bus[gpu[r]]));
    v[r].view.count = 8;
    for (int g = 0; g < 8; ++g) {
      MachineView::Gpu& m = v[r].view.gpus[g];
      snprintf(m.bus, sizeof(m.bus), "%s", bus[g]);
      m.access = 1;
      m.path = static_cast<uint8_t>(g == gpu[r] ? 0 : g / 4 == gpu[r] / 4 ? 2 : cross_path);
    }
  }
  return v;
}

TEST(RankAgreement, IslandsFromEveryView) {
  std::vector<int> islands;
  std::vector<RankInfo> v = twoSocketRanks({0, 1, 2, 3, 4, 5, 6, 7});
  ASSERT_TRUE(agreeIslands(v.data(), 8, &islands));
  EXPECT_EQ(islands, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  // Islands follow the GPUs, not the rank numbers.
  v = twoSocketRanks({0, 4, 1, 5, 2, 6});
  ASSERT_TRUE(agreeIslands(v.data(), 6, &islands));
  EXPECT_EQ(islands, (std::vector<int>{0, 1, 0, 1, 0, 1}));
  // One socket only: no islands; every path alike: none either.
  v = twoSocketRanks({0, 1, 2, 3});
  EXPECT_FALSE(agreeIslands(v.data(), 4, &islands));
  v = twoSocketRanks({0, 1, 4, 5}, /*cross_path=*/2);
  EXPECT_FALSE(agreeIslands(v.data(), 4, &islands));
  // The worse direction of a pair counts: rank 0 alone calling GPU 4 near changes nothing.
  v = twoSocketRanks({0, 1, 4, 5});
  v[0].view.gpus[4].path = 2;
  ASSERT_TRUE(agreeIslands(v.data(), 4, &islands));
  EXPECT_EQ(islands, (std::vector<int>{0, 0, 1, 1}));
  // Ranks sharing two GPUs split by GPU, even with nothing known about the path between them.
  v = twoSocketRanks({0, 1, 0, 1}, /*cross_path=*/5);
  ASSERT_TRUE(agreeIslands(v.data(), 4, &islands));
  EXPECT_EQ(islands, (std::vector<int>{0, 1, 0, 1}));
}

// What the handle carries: the knobs that shape plans, where not the defaults; pdl (a rank's own
// launches) is not among them.
TEST(RankAgreement, TheKnobsTextNamesWhatDiffersFromTheDefaults) {
  LaunchKnobs k;
  EXPECT_EQ(planKnobsText(k), "");
  ASSERT_EQ(parseLaunchKnobs("pdl=0,block_bytes=4096,lean=0,variant=p2p_twoshot", &k), "");
  EXPECT_EQ(planKnobsText(k), "block_bytes=4096,lean=0,variant=p2p_twoshot");
  LaunchKnobs all;
  ASSERT_EQ(parseLaunchKnobs("block_bytes=17,host_block_bytes=17,bulk_block_bytes=17,"
                             "oneshot_step_bytes=17,bulk_step_bytes=17,max_threads=64,push_batch=3,"
                             "push_eighths=3,lean=0,host_sentinel=0,pull_ll_bytes=17,"
                             "fused_cluster=0,fused_pull_ll=1,fused_twoshot_rows=9,host_fence=1,"
                             "node_small_bytes=1073741824,variant=p2p_reduce_scatter_pull",
                             &all),
            "");
  EXPECT_LT(planKnobsText(all).size(), sizeof(RankInfo{}.knobs));  // every knob fits
}

}  // namespace
}  // namespace tpcomm

namespace tpcomm {
namespace {

// The fabric probe's verdict from every rank's view: one rank that saw the stores collapse keeps
// every rank from pushing; views that differ otherwise agree on "unknown" (the push defaults).
TEST(RankAgreement, FabricVerdictFromEveryView) {
  std::vector<RankInfo> all = {info(0, 4, "0000:18:00.0"), info(1, 4, "0000:2a:00.0"),
                               info(2, 4, "0000:3a:00.0"), info(3, 4, "0000:5d:00.0")};
  auto set = [&all](std::vector<FabricVerdict> v) {
    for (size_t r = 0; r < all.size(); ++r) all[r].view.fabric_verdict = static_cast<uint8_t>(v[r]);
    return agreeFabricVerdict(all.data(), static_cast<int>(all.size()));
  };
  using V = FabricVerdict;
  EXPECT_EQ(set({V::kPushFine, V::kPushFine, V::kPushFine, V::kPushFine}), V::kPushFine);
  EXPECT_EQ(set({V::kPushFine, V::kUnknown, V::kWriteCollapse, V::kPushFine}), V::kWriteCollapse);
  EXPECT_EQ(set({V::kPushFine, V::kUnknown, V::kPushFine, V::kPushFine}), V::kUnknown);
  EXPECT_EQ(set({V::kUnknown, V::kUnknown, V::kUnknown, V::kUnknown}), V::kUnknown);
  // A handle with a verdict outside the enum is refused by name.
  all[2].view.fabric_verdict = 9;
  EXPECT_EQ(checkHandleFields(all[2], 2), tpcommInvalidArgument);
  EXPECT_NE(std::string(lastError()).find("view.fabric_verdict"), std::string::npos) << lastError();
}

}  // namespace
}  // namespace tpcomm
