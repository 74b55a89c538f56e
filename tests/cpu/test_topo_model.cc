// The Topology model and its JSON form: construction, invariants, the key that names caches and
// tuning tables, and the fixtures in tests/cpu/data/topo/ (round trip, malformed files rejected).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "topo/cache_dir.h"
#include "topo/topology.h"
#include "topo/topology_json.h"

namespace tpcomm {
namespace topo {
namespace {

const char* const kFixtures[] = {"rtx_pro_6000_8x_pcie_2socket", "rtx_4090_4x_no_p2p",
                                 "h200_8x_nvswitch", "h200_2x_nvlink"};

std::string fixturePath(const std::string& name) {
  return std::string(TPCOMM_TEST_DATA_DIR) + "/topo/" + name + ".json";
}

Topology fixture(const std::string& name) {
  Topology t;
  EXPECT_EQ(loadTopologyFile(fixturePath(name), &t), tpcommSuccess) << name;
  return t;
}

std::string fixtureText(const std::string& name) {
  std::string text, why;
  EXPECT_TRUE(readTextFile(fixturePath(name), &text, &why)) << why;
  return text;
}

Topology twoGpus() {
  Topology t;
  t.driver_version = "580.65.06";
  t.resize(2);
  for (int i = 0; i < 2; ++i) {
    t.gpus[i].name = "NVIDIA H200";
    t.gpus[i].uuid = "GPU-" + std::to_string(i);
    t.gpus[i].pci_bus_id = i ? "0000:2a:00.0" : "0000:18:00.0";
    t.gpus[i].cc_major = 9;
  }
  t.setLink(0, 1, LinkInfo{18, PathClass::kNvlink, true, P2pHealth::kWorks});
  return t;
}

// Replaces the first occurrence of `from` in text (the fixture must contain it).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string rejection(const std::string& text) {
  Topology t;
  std::string why;
  EXPECT_FALSE(parseTopology(text, &t, &why)) << "accepted:\n" << text;
  return why;
}

TEST(TopoModel, NamesRoundTrip) {
  for (int p = 0; p <= static_cast<int>(PathClass::kUnknown); ++p) {
    PathClass back;
    ASSERT_TRUE(parsePathClass(pathClassName(static_cast<PathClass>(p)), &back));
    EXPECT_EQ(static_cast<int>(back), p);
  }
  for (int h = 0; h <= static_cast<int>(P2pHealth::kNotTested); ++h) {
    P2pHealth back;
    ASSERT_TRUE(parseP2pHealth(p2pHealthName(static_cast<P2pHealth>(h)), &back));
    EXPECT_EQ(static_cast<int>(back), h);
  }
  PathClass p;
  EXPECT_FALSE(parsePathClass("NVLink", &p));
  EXPECT_LT(PathClass::kNvlink, PathClass::kPcieSameSwitch);  // the order ranks paths
  EXPECT_LT(PathClass::kPcieHostBridge, PathClass::kPcieCrossSocket);
}

TEST(TopoModel, ResizeAndSetLink) {
  Topology t = twoGpus();
  EXPECT_EQ(t.size(), 2);
  EXPECT_EQ(t.link(0, 0).path, PathClass::kSelf);
  EXPECT_EQ(t.link(1, 0).nvlink_count, 18);  // setLink writes both directions
  EXPECT_EQ(t.gpus[1].index, 1);
  std::string why;
  EXPECT_TRUE(t.validate(&why)) << why;
}

TEST(TopoModel, ValidateCatchesBrokenInvariants) {
  std::string why;
  Topology t = twoGpus();
  t.links[0][1].nvlink_count = 4;  // one direction only
  EXPECT_FALSE(t.validate(&why));
  EXPECT_NE(why.find("not symmetric"), std::string::npos);

  t = twoGpus();
  t.gpus[1].uuid = t.gpus[0].uuid;
  EXPECT_FALSE(t.validate(&why));
  EXPECT_NE(why.find("duplicate uuid"), std::string::npos);

  t = twoGpus();
  t.setLink(0, 1, LinkInfo{2, PathClass::kPcieSameSwitch, true, P2pHealth::kWorks});
  EXPECT_FALSE(t.validate(&why));
  EXPECT_NE(why.find("nvlink_count > 0"), std::string::npos);

  t = twoGpus();
  t.setLink(0, 1, LinkInfo{0, PathClass::kPcieSameSwitch, false, P2pHealth::kWorks});
  EXPECT_FALSE(t.validate(&why));
  EXPECT_NE(why.find("not supported"), std::string::npos);

  t = twoGpus();
  t.gpus[0].pci_bus_id = "18:00.0";
  EXPECT_FALSE(t.validate(&why));
  EXPECT_NE(why.find("pci_bus_id"), std::string::npos);
}

TEST(TopoModel, NormalizeBusId) {
  EXPECT_EQ(normalizeBusId("00000000:18:00.0"), "0000:18:00.0");  // NVML
  EXPECT_EQ(normalizeBusId("0000:9A:00.0"), "0000:9a:00.0");      // upper case
  EXPECT_EQ(normalizeBusId("0001:c1:1f.7"), "0001:c1:1f.7");
  EXPECT_EQ(normalizeBusId(""), "");
  EXPECT_EQ(normalizeBusId("18:00.0"), "");
  EXPECT_EQ(normalizeBusId("0000:18:00.0 "), "");
  EXPECT_EQ(normalizeBusId("0000:100:00.0"), "");
  EXPECT_EQ(normalizeBusId("0000:18:20.0"), "");  // device numbers stop at 0x1f
  EXPECT_EQ(normalizeBusId("-000:18:00.0"), "");
}

TEST(TopoModel, KeyIsStable) {
  // A golden value: caches and tuning tables are named by it, so a change of the hash (or of what
  // it covers) must be deliberate; it makes every user's cached results stale.
  EXPECT_EQ(twoGpus().key(), "2gpu-7782e37c8763d77a");
  EXPECT_EQ(fixture("h200_2x_nvlink").key(), fixture("h200_2x_nvlink").key());
}

TEST(TopoModel, KeyCoversUuidsAndDriverButNotOrdinals) {
  const Topology base = twoGpus();
  Topology swapped = twoGpus();
  std::swap(swapped.gpus[0].uuid, swapped.gpus[1].uuid);  // CUDA_VISIBLE_DEVICES=1,0
  EXPECT_EQ(swapped.key(), base.key());
  Topology other_driver = twoGpus();
  other_driver.driver_version = "580.82.07";
  EXPECT_NE(other_driver.key(), base.key());
  Topology other_gpu = twoGpus();
  other_gpu.gpus[1].uuid = "GPU-7";
  EXPECT_NE(other_gpu.key(), base.key());
  Topology p2p_changed = twoGpus();  // results (P2P health) are not identity
  p2p_changed.links[0][1].p2p_works = p2p_changed.links[1][0].p2p_works = P2pHealth::kBroken;
  EXPECT_EQ(p2p_changed.key(), base.key());
  EXPECT_EQ(base.key().rfind("2gpu-", 0), 0u);
  std::set<std::string> keys;
  for (const char* name : kFixtures) keys.insert(fixture(name).key());
  EXPECT_EQ(keys.size(), 4u);
}

TEST(TopoModel, FixturesLoadAsDescribed) {
  const Topology pro = fixture("rtx_pro_6000_8x_pcie_2socket");
  ASSERT_EQ(pro.size(), 8);
  EXPECT_EQ(pro.gpus[0].cc_major, 12);
  EXPECT_EQ(pro.gpus[0].cc_minor, 0);
  EXPECT_EQ(pro.link(0, 3).path, PathClass::kPcieSameSwitch);
  EXPECT_EQ(pro.link(3, 4).path, PathClass::kPcieCrossSocket);
  EXPECT_EQ(pro.link(2, 6).p2p_works, P2pHealth::kWorks);
  EXPECT_EQ(pro.gpus[5].numa_node, 1);

  const Topology geforce = fixture("rtx_4090_4x_no_p2p");
  ASSERT_EQ(geforce.size(), 4);
  EXPECT_EQ(geforce.gpus[0].cc_minor, 9);
  EXPECT_FALSE(geforce.link(0, 1).p2p_supported);
  EXPECT_EQ(geforce.link(2, 3).p2p_works, P2pHealth::kNotTested);

  const Topology hgx = fixture("h200_8x_nvswitch");
  ASSERT_EQ(hgx.size(), 8);
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a != b) {
        EXPECT_EQ(hgx.link(a, b).nvlink_count, 18);
      }
    }
  }

  const Topology two = fixture("h200_2x_nvlink");
  ASSERT_EQ(two.size(), 2);
  EXPECT_EQ(two.link(0, 1).path, PathClass::kNvlink);
  EXPECT_GT(two.link(0, 1).nvlink_count, 0);
  EXPECT_EQ(two.gpus[1].cc_major, 9);
}

TEST(TopoJson, FixturesRoundTripExactly) {
  for (const char* name : kFixtures) {
    const std::string text = fixtureText(name);
    Topology t;
    std::string why;
    ASSERT_TRUE(parseTopology(text, &t, &why)) << name << ": " << why;
    EXPECT_TRUE(topologyToText(t) == text) << name << " is not in canonical form";
    Topology back;
    ASSERT_TRUE(parseTopology(topologyToText(t), &back, &why)) << why;
    EXPECT_EQ(back.key(), t.key());
    EXPECT_EQ(topologyToJson(back), topologyToJson(t));
  }
}

TEST(TopoJson, BuiltTopologyRoundTrips) {
  Topology t = twoGpus();
  t.sources = "test";
  t.gpus[0].numa_node = 1;
  Topology back;
  std::string why;
  ASSERT_TRUE(parseTopology(topologyToText(t), &back, &why)) << why;
  EXPECT_EQ(back.gpus[0].numa_node, 1);
  EXPECT_EQ(back.gpus[1].uuid, "GPU-1");
  EXPECT_EQ(back.link(1, 0).nvlink_count, 18);
  EXPECT_EQ(back.sources, "test");
}

TEST(TopoJson, MalformedFilesAreRejectedWithAClearMessage) {
  const std::string good = fixtureText("h200_2x_nvlink");
  EXPECT_NE(rejection(good.substr(0, good.size() / 2)).find("end of input"), std::string::npos);
  EXPECT_NE(rejection("").find("end of input"), std::string::npos);
  EXPECT_NE(rejection("[]").find("expected an object"), std::string::npos);
  EXPECT_EQ(rejection(replaced(good, "\"tpcomm_topology\": 1", "\"tpcomm_topology\": 2")),
            "tpcomm_topology: format version 2 is not supported (this tpcomm reads version 1)");
  EXPECT_EQ(rejection(replaced(good, "\"tpcomm_topology\": 1,", "")), "tpcomm_topology: missing");
  EXPECT_EQ(rejection(replaced(good, "\"path\": \"nvlink\"", "\"path\": \"nvswitch\"")),
            "links[0].path: 'nvswitch' is not one of nvlink, pcie_switch, pcie_host_bridge, "
            "pcie_cross_socket, unknown");
  EXPECT_EQ(rejection(replaced(good, "\"p2p_works\": \"works\"", "\"p2p_works\": \"yes\"")),
            "links[0].p2p_works: 'yes' is not one of unknown, works, broken, not_tested");
  EXPECT_EQ(rejection(replaced(good, "\"cc_major\": 9", "\"cc_major\": \"9\"")),
            "gpus[0].cc_major: expected an integer, found a string");
  EXPECT_EQ(rejection(replaced(good, "\"index\": 1", "\"index\": 0")),
            "gpus[1].index: is 0, expected its position 1");
  EXPECT_EQ(
      rejection(replaced(good, "\"pci_bus_id\": \"0000:00:06.0\"", "\"pci_bus_id\": \"18:0\"")),
      "gpus[0].pci_bus_id: '18:0' is not of the form 0000:18:00.0");
  EXPECT_EQ(rejection(replaced(good, "\"gpus\": [0, 1]", "\"gpus\": [0, 0]")),
            "links[0].gpus: [0, 0] is not a pair of distinct GPUs of this topology");
  EXPECT_EQ(rejection(replaced(good, "\"gpus\": [0, 1]", "\"gpus\": [0, 2]")),
            "links[0].gpus: [0, 2] is not a pair of distinct GPUs of this topology");
  EXPECT_EQ(rejection(replaced(good, "\"nvlink_count\": 18", "\"nvlink_count\": 18, \"speed\": 1")),
            "links[0].speed: unknown member (a typo, or a file from a newer tpcomm?)");
  EXPECT_NE(rejection(replaced(good, "\"uuid\": \"GPU-", "\"uuid\": \"\", \"x\": \""))
                .find("gpus[0].uuid"),
            std::string::npos);
}

TEST(TopoJson, EveryPairMustBeListedOnce) {
  Topology t = twoGpus();
  json::Value v = topologyToJson(t);
  json::Value empty_links = v;
  empty_links.set("links", json::Value::array());
  Topology out;
  std::string why;
  EXPECT_FALSE(topologyFromJson(empty_links, &out, &why));
  EXPECT_EQ(why, "links: no entry for GPUs [0, 1] (every pair must be listed)");
  json::Value twice = v;
  json::Value links = *v.find("links");
  links.push(links.items()[0]);
  twice.set("links", links);
  EXPECT_FALSE(topologyFromJson(twice, &out, &why));
  EXPECT_EQ(why, "links[1].gpus: pair listed twice");
}

TEST(TopoJson, LoadTopologyFileReportsThePath) {
  Topology t;
  EXPECT_EQ(loadTopologyFile("/nonexistent/topo.json", &t), tpcommSystemError);
}

}  // namespace
}  // namespace topo
}  // namespace tpcomm
