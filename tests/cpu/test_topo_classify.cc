// Fabric classification and island detection on the fixture machines, with all ranks, subsets of
// ranks, and ranks sharing a GPU: the facts the policy turns into an algorithm.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cpu/support/topo_fixture.h"
#include "topo/classify.h"
#include "topo/topology_json.h"

namespace tpcomm {
namespace topo {
namespace {

std::vector<int> iota(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

Classification classified(const Topology& t, const std::vector<int>& rank_gpu) {
  Classification c;
  EXPECT_EQ(classify(t, rank_gpu, &c), tpcommSuccess);
  return c;
}

TEST(TopoClassify, H200NvlinkPairIsNvlink) {
  const Topology t = test::topoFixture("h200_2x_nvlink");
  const Classification c = classified(t, {0, 1});
  EXPECT_EQ(c.fabric, Fabric::kNvlink);
  EXPECT_FALSE(c.two_islands);
  EXPECT_EQ(c.worst_path, PathClass::kNvlink);
  EXPECT_NE(c.reason.find("NVLink between all 2 GPUs"), std::string::npos) << c.reason;
}

TEST(TopoClassify, H200NvswitchIsNvlinkForAnySubset) {
  const Topology t = test::topoFixture("h200_8x_nvswitch");
  EXPECT_EQ(fabricFor(t, iota(8)), Fabric::kNvlink);
  EXPECT_EQ(fabricFor(t, {0, 7}), Fabric::kNvlink);
  EXPECT_EQ(fabricFor(t, {1, 3, 5}), Fabric::kNvlink);
  EXPECT_FALSE(twoIslands(t, iota(8), nullptr));  // every pair alike: one island
}

TEST(TopoClassify, RtxPro6000IsPcieWithTwoIslandsOfFour) {
  const Topology t = test::topoFixture("rtx_pro_6000_8x_pcie_2socket");
  const Classification c = classified(t, iota(8));
  EXPECT_EQ(c.fabric, Fabric::kPcie);
  EXPECT_EQ(c.worst_path, PathClass::kPcieCrossSocket);
  ASSERT_TRUE(c.two_islands) << c.reason;
  EXPECT_EQ(c.island_of_rank, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_NE(c.reason.find("two islands {0,1,2,3} {4,5,6,7}"), std::string::npos) << c.reason;
}

TEST(TopoClassify, RtxPro6000Subsets) {
  const Topology t = test::topoFixture("rtx_pro_6000_8x_pcie_2socket");
  // Inside one switch: PCIe, but one island only.
  Classification c = classified(t, {0, 1, 2, 3});
  EXPECT_EQ(c.fabric, Fabric::kPcie);
  EXPECT_EQ(c.worst_path, PathClass::kPcieSameSwitch);
  EXPECT_FALSE(c.two_islands);
  // Two from each socket, in a mixed rank order: islands follow the GPUs, not the rank numbers.
  c = classified(t, {0, 4, 1, 5});
  EXPECT_EQ(c.fabric, Fabric::kPcie);
  ASSERT_TRUE(c.two_islands);
  EXPECT_EQ(c.island_of_rank, (std::vector<int>{0, 1, 0, 1}));
  // Three and one: no equal split.
  EXPECT_FALSE(twoIslands(t, {0, 1, 2, 4}, nullptr));
  // Two ranks: islands of one rank are not islands.
  EXPECT_FALSE(twoIslands(t, {0, 4}, nullptr));
  EXPECT_EQ(fabricFor(t, {0, 4}), Fabric::kPcie);
}

TEST(TopoClassify, GeforceWithoutP2pIsHost) {
  const Topology t = test::topoFixture("rtx_4090_4x_no_p2p");
  const Classification c = classified(t, iota(4));
  EXPECT_EQ(c.fabric, Fabric::kHost);
  EXPECT_FALSE(c.two_islands);
  EXPECT_NE(c.reason.find("GPU 0 - GPU 1: P2P not supported"), std::string::npos) << c.reason;
  EXPECT_EQ(fabricFor(t, {2, 3}), Fabric::kHost);
}

TEST(TopoClassify, RanksSharingAGpuAlwaysReachEachOther) {
  const Topology geforce = test::topoFixture("rtx_4090_4x_no_p2p");
  const Classification one = classified(geforce, {2, 2, 2});
  EXPECT_EQ(one.fabric, Fabric::kNvlink);  // device memory: the fastest "fabric" there is
  EXPECT_NE(one.reason.find("all 3 ranks on one GPU"), std::string::npos);
  EXPECT_EQ(fabricFor(geforce, {0, 0, 1}), Fabric::kHost);  // but 0 and 1 still lack P2P

  const Topology two = test::topoFixture("h200_2x_nvlink");
  EXPECT_EQ(fabricFor(two, {0, 1, 0, 1}), Fabric::kNvlink);
  // Ranks on the same GPU form the islands when the GPUs differ (path self < nvlink), but only
  // PCIe has an island algorithm, so classify does not report them.
  std::vector<int> islands;
  EXPECT_TRUE(twoIslands(two, {0, 0, 1, 1}, &islands));
  EXPECT_EQ(islands, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_FALSE(classified(two, {0, 0, 1, 1}).two_islands);

  const Topology pro = test::topoFixture("rtx_pro_6000_8x_pcie_2socket");
  const Classification c = classified(pro, {0, 0, 4, 4, 1, 1, 5, 5});
  EXPECT_EQ(c.fabric, Fabric::kPcie);
  ASSERT_TRUE(c.two_islands);
  EXPECT_EQ(c.island_of_rank, (std::vector<int>{0, 0, 1, 1, 0, 0, 1, 1}));
}

TEST(TopoClassify, BrokenP2pMeansHost) {
  Topology t = test::topoFixture("rtx_pro_6000_8x_pcie_2socket");
  LinkInfo l = t.link(2, 6);
  l.p2p_works = P2pHealth::kBroken;
  t.setLink(2, 6, l);
  const Classification c = classified(t, iota(8));
  EXPECT_EQ(c.fabric, Fabric::kHost);
  EXPECT_NE(c.reason.find("GPU 2 - GPU 6: P2P broken"), std::string::npos) << c.reason;
  EXPECT_EQ(fabricFor(t, {0, 1, 2, 3}), Fabric::kPcie);  // the other GPUs are unaffected
  // A broken NVLink pair is not NVLink either.
  Topology h = test::topoFixture("h200_8x_nvswitch");
  LinkInfo n = h.link(0, 1);
  n.p2p_works = P2pHealth::kBroken;
  h.setLink(0, 1, n);
  EXPECT_EQ(fabricFor(h, {0, 1}), Fabric::kHost);
  EXPECT_EQ(fabricFor(h, {0, 2}), Fabric::kNvlink);
}

TEST(TopoClassify, UntestedSupportedP2pCountsAsUsable) {
  Topology t = test::topoFixture("rtx_pro_6000_8x_pcie_2socket");
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) {
      LinkInfo l = t.link(a, b);
      l.p2p_works = P2pHealth::kUnknown;
      t.setLink(a, b, l);
    }
  EXPECT_EQ(fabricFor(t, iota(8)), Fabric::kPcie);
}

TEST(TopoClassify, MixedNvlinkAndPcieIsPcie) {
  Topology t = test::topoFixture("h200_8x_nvswitch");
  t.setLink(3, 4, LinkInfo{0, PathClass::kPcieCrossSocket, true, P2pHealth::kWorks});
  const Classification c = classified(t, {2, 3, 4, 5});
  EXPECT_EQ(c.fabric, Fabric::kPcie);
  EXPECT_NE(c.reason.find("GPU 3 - GPU 4: pcie_cross_socket"), std::string::npos) << c.reason;
  EXPECT_FALSE(c.two_islands);  // 3-4 is slow, 2-4 is not: no clean split
}

TEST(TopoClassify, NvlinkWithUnknownCount) {
  Topology t = test::topoFixture("h200_2x_nvlink");
  t.setLink(0, 1, LinkInfo{0, PathClass::kNvlink, true, P2pHealth::kUnknown});
  const Classification c = classified(t, {0, 1});
  EXPECT_EQ(c.fabric, Fabric::kNvlink);
  EXPECT_NE(c.reason.find("link count unknown"), std::string::npos);
}

TEST(TopoClassify, InvalidRanksAreRejected) {
  const Topology t = test::topoFixture("h200_2x_nvlink");
  Classification c;
  EXPECT_EQ(classify(t, {}, &c), tpcommInvalidArgument);
  EXPECT_EQ(classify(t, {0, 2}, &c), tpcommInvalidArgument);
  EXPECT_EQ(classify(t, {-1, 0}, &c), tpcommInvalidArgument);
  EXPECT_EQ(fabricFor(t, {0, 5}), Fabric::kHost);
  EXPECT_FALSE(twoIslands(t, {0, 1, 2, 3}, nullptr));
}

}  // namespace
}  // namespace topo
}  // namespace tpcomm
