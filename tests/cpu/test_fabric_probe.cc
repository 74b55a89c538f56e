// The fabric probe's verdict on synthetic fabrics shaped like the published ones
// (../shared/BRIEF.md, "PCIe fabrics"), its JSON round trip, and its per-machine cache.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "common/json.h"
#include "support/synthetic_fabrics.h"
#include "topo/probe/fabric_probe.h"
#include "topo/probe/fabric_probe_cache.h"
#include "topo/probe/fabric_probe_json.h"
#include "topo/topology_json.h"

namespace tpcomm {
namespace topo {

namespace {

// Broadcom PEX890xx with dual AMD Turin: stores 37 -> 2.7 GB/s once several GPUs write, loads
// ~27 GB/s, copy engines 56 GB/s.
TEST(FabricVerdict, BroadcomSwitchOnDualTurinCollapses) {
  const FabricFinding f = judgeFabric(syntheticFabric(37, 27, 56, 2.7, 27), true);
  EXPECT_EQ(f.verdict, FabricVerdict::kWriteCollapse) << f.what;
  EXPECT_NE(f.what.find("2.7 GB/s"), std::string::npos) << f.what;
  EXPECT_NE(f.action.find("oneshot_pull"), std::string::npos) << f.action;
}

// Microchip PM50100 with Threadripper Pro: 52 -> 7 GB/s at four writers or more (0.13x).
TEST(FabricVerdict, MicrochipSwitchCollapses) {
  EXPECT_EQ(judgeFabric(syntheticFabric(52, 40, 56, 7, 38), true).verdict,
            FabricVerdict::kWriteCollapse);
}

// A healthy switch: all-pairs stores at NCCL's 37-41 GB/s bus bandwidth of 53-56 per link.
TEST(FabricVerdict, HealthySwitchPushes) {
  const FabricFinding f = judgeFabric(syntheticFabric(54, 45, 56, 39, 35), true);
  EXPECT_EQ(f.verdict, FabricVerdict::kPushFine) << f.what;
  EXPECT_NE(f.action.find("push"), std::string::npos);
}

// Two sockets, no switches: cross-socket pairs at 23.8 GB/s, and all-pairs stores limited by
// the socket link to the same (0.45x of a same-socket pair): slower, but not a collapse.
TEST(FabricVerdict, TwoSocketsWithoutSwitchesPush) {
  EXPECT_EQ(judgeFabric(syntheticFabric(53, 45, 56, 23.8, 22, 23.8), true).verdict,
            FabricVerdict::kPushFine);
}

// Stores and loads both fall: the fabric is shared, not write-collapsing; pulling would not help.
TEST(FabricVerdict, StoresAndLoadsFallingTogetherIsNoCollapse) {
  EXPECT_EQ(judgeFabric(syntheticFabric(50, 45, 56, 6, 8), true).verdict, FabricVerdict::kPushFine);
}

TEST(FabricVerdict, NoP2pWhateverTheNumbers) {
  FabricProbe p;
  p.gpus = {0, 1};
  p.host = {52, 50, 55, 1.38};
  const FabricFinding f = judgeFabric(p, false);
  EXPECT_EQ(f.verdict, FabricVerdict::kNoP2p);
  EXPECT_NE(f.what.find("1.38 us"), std::string::npos) << f.what;
  EXPECT_NE(f.action.find("host"), std::string::npos);
}

TEST(FabricVerdict, OneGpuHasNothingToJudge) {
  FabricProbe p;
  p.gpus = {0};
  p.host = {52, 50, 55, 1.38};
  const FabricFinding f = judgeFabric(p, true);
  EXPECT_EQ(f.verdict, FabricVerdict::kUnknown);
  EXPECT_NE(f.what.find("one GPU"), std::string::npos) << f.what;
}

// Two ranks' buffers on one H200 ({0, 0}, as the lent machine runs): HBM, no link, so the verdict
// is push_fine for ranks sharing it, labelled as what it is, and P2P does not enter into it.
TEST(FabricVerdict, TwoBuffersOnOneGpuPushWithTheLabel) {
  const FabricProbe p = syntheticOneGpu(2900, 3100, 1800, 1500, 1600);
  ASSERT_TRUE(p.sameGpu());
  for (bool p2p : {true, false}) {
    const FabricFinding f = judgeFabric(p, p2p);
    EXPECT_EQ(f.verdict, FabricVerdict::kPushFine) << f.what;
    EXPECT_EQ(f.what.rfind("one GPU: two buffers on it, memory and launches, not a link: ", 0), 0u)
        << f.what;
    EXPECT_NE(f.what.find("1500.0 GB/s per GPU with both buffers at once vs 2900.0 GB/s"),
              std::string::npos)
        << f.what;
    EXPECT_NE(f.action.find("ranks sharing this GPU push"), std::string::npos) << f.action;
  }
}

TEST(FabricVerdict, OneGpuWithMissingNumbersIsUnknown) {
  FabricProbe p = syntheticOneGpu(2900, 3100, 1800, 1500, 1600);
  p.all_pairs.load_gbps = -1;
  p.error = "SM loads did not finish in time";
  const FabricFinding f = judgeFabric(p, true);
  EXPECT_EQ(f.verdict, FabricVerdict::kUnknown);
  EXPECT_NE(f.what.find("one GPU: two buffers on it"), std::string::npos) << f.what;
  EXPECT_NE(f.what.find("SM loads did not finish"), std::string::npos) << f.what;
  p = syntheticOneGpu(-1, 3100, 1800, 1500, 1600);  // no single-pair store
  p.error = "";
  EXPECT_EQ(judgeFabric(p, true).verdict, FabricVerdict::kUnknown);
  // Cut short before its first pair (the budget spent in set-up): still labelled one GPU.
  p = syntheticOneGpu(2900, 3100, 1800, 1500, 1600);
  p.pairs.clear();
  p.all_pairs = LinkSpeed{};
  p.error = "the probe's time budget ran out before SM stores";
  const FabricFinding cut = judgeFabric(p, true);
  EXPECT_EQ(cut.verdict, FabricVerdict::kUnknown);
  EXPECT_NE(cut.what.find("one GPU: two buffers on it"), std::string::npos) << cut.what;
}

// Stores collapsing while loads hold, on one GPU: no link was crossed, so it is no posted-write
// collapse (and must not steer anyone to pull); the numbers are still shown, with the doubt.
TEST(FabricVerdict, OneGpuWhoseStoresCollapseIsNoWriteCollapse) {
  const FabricFinding f = judgeFabric(syntheticOneGpu(2900, 3100, 1800, 300, 1600), true);
  EXPECT_EQ(f.verdict, FabricVerdict::kUnknown) << f.what;
  EXPECT_NE(f.what.find("one GPU: two buffers on it"), std::string::npos) << f.what;
  EXPECT_NE(f.what.find("300.0 GB/s"), std::string::npos) << f.what;
  EXPECT_NE(f.what.find("(0.10x)"), std::string::npos) << f.what;
  EXPECT_NE(f.what.find("no write collapse"), std::string::npos) << f.what;
  EXPECT_NE(f.action.find("--reprobe"), std::string::npos) << f.action;
}

TEST(FabricVerdict, AProbeCutShortIsUnknown) {
  FabricProbe p = syntheticFabric(37, 27, 56, 2.7, 27);
  p.all_pairs = LinkSpeed{};
  p.error = "the probe's time budget ran out before SM stores";
  const FabricFinding f = judgeFabric(p, true);
  EXPECT_EQ(f.verdict, FabricVerdict::kUnknown);
  EXPECT_NE(f.what.find("budget"), std::string::npos);
}

TEST(FabricVerdict, NamesRoundTrip) {
  for (FabricVerdict v : {FabricVerdict::kUnknown, FabricVerdict::kPushFine,
                          FabricVerdict::kWriteCollapse, FabricVerdict::kNoP2p}) {
    FabricVerdict back = FabricVerdict::kUnknown;
    ASSERT_TRUE(parseFabricVerdict(fabricVerdictName(v), &back));
    EXPECT_EQ(back, v);
  }
  FabricVerdict x;
  EXPECT_FALSE(parseFabricVerdict("collapse", &x));
}

// p written as JSON and read back into *back, which must write the same text; *text: p's.
void roundTrip(const FabricProbe& p, FabricProbe* back, std::string* text) {
  *text = json::write(fabricProbeToJson(p));
  json::Value v;
  std::string why;
  ASSERT_TRUE(json::parse(*text, &v, &why)) << why;
  ASSERT_TRUE(fabricProbeFromJson(v, back, &why)) << why;
  EXPECT_EQ(json::write(fabricProbeToJson(*back)), *text);
}

TEST(FabricProbeJson, RoundTripsEveryNumberAndNull) {
  FabricProbe p = syntheticFabric(37, 27, 56, 2.7, 27);
  p.topology_key = "8gpu-0123456789abcdef";
  p.fabric_hash = "fedcba9876543210";
  p.error = "";
  FabricProbe back;
  std::string text;
  ASSERT_NO_FATAL_FAILURE(roundTrip(p, &back, &text));
  EXPECT_EQ(back.pairs.size(), 28u);
  EXPECT_DOUBLE_EQ(back.all_pairs.store_gbps, 2.7);
  EXPECT_LT(back.all_pairs.latency_us, 0);  // null: not measured
  EXPECT_NE(text.find("\"latency_us\": null"), std::string::npos);
  EXPECT_EQ(judgeFabric(back, true).verdict, FabricVerdict::kWriteCollapse);
}

TEST(FabricProbeJson, RoundTripsTwoBuffersOnOneGpu) {
  FabricProbe p = syntheticOneGpu(2900, 3100, 1800, 1500, 1600);
  p.topology_key = "1gpu-0123456789abcdef";
  p.fabric_hash = "fedcba9876543210";
  FabricProbe back;
  std::string text;
  ASSERT_NO_FATAL_FAILURE(roundTrip(p, &back, &text));
  EXPECT_EQ(back.gpus, (std::vector<int>{0, 0}));
  EXPECT_TRUE(back.sameGpu());
  EXPECT_EQ(judgeFabric(back, true).verdict, FabricVerdict::kPushFine);
}

TEST(FabricProbeJson, RejectsWhatItCannotTrust) {
  FabricProbe p = syntheticFabric(37, 27, 56, 2.7, 27);
  p.topology_key = "8gpu-0123456789abcdef";
  p.fabric_hash = "fedcba9876543210";
  const std::string good = json::write(fabricProbeToJson(p));
  auto rejects = [](std::string text, const std::string& expect) {
    json::Value v;
    std::string why;
    ASSERT_TRUE(json::parse(text, &v, &why)) << why;
    FabricProbe out;
    EXPECT_FALSE(fabricProbeFromJson(v, &out, &why)) << text;
    EXPECT_NE(why.find(expect), std::string::npos) << why;
  };
  auto replaced = [&good](const std::string& from, const std::string& to) {
    std::string t = good;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
  };
  rejects(replaced("\"tpcomm_fabric_probe\": 1", "\"tpcomm_fabric_probe\": 2"), "format 2");
  rejects(replaced("\"store_gbps\": 2.7", "\"store_gbps\": -2.7"), "all_pairs.store_gbps");
  rejects(replaced("\"store_gbps\": 2.7", "\"store_gbps\": \"fast\""), "store_gbps");
  rejects(replaced("\"elapsed_ms\"", "\"elapsed\""), "elapsed");
  rejects(replaced("\"a\": 0, \"b\": 1", "\"a\": 0, \"b\": 9"), "not in \"gpus\"");
}

class FabricProbeCache : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tpcomm_probe_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(
        loadTopologyFile(
            std::string(TPCOMM_TEST_DATA_DIR) + "/topo/rtx_pro_6000_8x_pcie_2socket.json", &topo_),
        tpcommSuccess);
    for (int g = 0; g < 8; ++g) gpus_.push_back(g);
  }
  void TearDown() override { ASSERT_EQ(system(("rm -rf '" + dir_ + "'").c_str()), 0); }

  FabricProbeOptions options() {
    FabricProbeOptions o;
    o.cache_path = dir_ + "/sub/probe.json";
    o.prober = [this](const std::vector<int>& gpus, int budget_ms, FabricProbe* out, std::string*) {
      ++runs_;
      budget_ = budget_ms;
      *out = syntheticFabric(37, 27, 56, 2.7, 27);
      out->gpus = gpus;
      std::vector<ProbePair> mine;  // only the pairs of the GPUs asked for
      for (const ProbePair& pair : out->pairs)
        if (pair.b < static_cast<int>(gpus.size())) mine.push_back(pair);
      out->pairs = mine;
      out->error = cut_short_ ? "the probe's time budget ran out before SM loads" : "";
      return true;
    };
    return o;
  }

  std::string dir_;
  Topology topo_;
  std::vector<int> gpus_;
  int runs_ = 0, budget_ = 0;
  bool cut_short_ = false;
};

TEST_F(FabricProbeCache, ProbesOnceThenRemembers) {
  FabricProbe p;
  std::string why;
  ASSERT_EQ(obtainFabricProbe(topo_, gpus_, options(), &p, &why), ProbeSource::kMeasured) << why;
  EXPECT_EQ(runs_, 1);
  EXPECT_EQ(budget_, 3000);
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/sub/probe.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  FabricProbe again;
  ASSERT_EQ(obtainFabricProbe(topo_, gpus_, options(), &again, &why), ProbeSource::kCache);
  EXPECT_EQ(runs_, 1);
  EXPECT_EQ(again.topology_key, topo_.key());
  EXPECT_EQ(judgeFabric(again, true).verdict, FabricVerdict::kWriteCollapse);
  FabricProbeOptions re = options();
  re.reprobe = true;
  ASSERT_EQ(obtainFabricProbe(topo_, gpus_, re, &again, &why), ProbeSource::kMeasured);
  EXPECT_EQ(runs_, 2);
}

// A driver update (another key), a GPU in another slot or a changed path (another fabric hash),
// or another set of GPUs: the cached numbers describe another fabric and the probe runs again.
TEST_F(FabricProbeCache, AChangedMachineInvalidatesIt) {
  FabricProbe p;
  std::string why;
  ASSERT_EQ(obtainFabricProbe(topo_, gpus_, options(), &p, &why), ProbeSource::kMeasured);
  Topology driver = topo_;
  driver.driver_version = "999.1";
  ASSERT_EQ(obtainFabricProbe(driver, gpus_, options(), &p, &why), ProbeSource::kMeasured);
  EXPECT_EQ(runs_, 2);  // the same file name here (cache_path is fixed): the key inside differs

  Topology moved = driver;
  LinkInfo l = moved.link(0, 5);
  l.path = PathClass::kPcieHostBridge;
  moved.setLink(0, 5, l);
  std::string stale;
  EXPECT_FALSE(readFabricProbeCache(dir_ + "/sub/probe.json", moved.key(),
                                    probeFabricHash(moved, gpus_), gpus_, &p, &stale));
  EXPECT_NE(stale.find("fabric_hash"), std::string::npos) << stale;
  ASSERT_EQ(obtainFabricProbe(moved, gpus_, options(), &p, &why), ProbeSource::kMeasured);
  EXPECT_EQ(runs_, 3);

  ASSERT_EQ(obtainFabricProbe(moved, {0, 1, 2, 3}, options(), &p, &why), ProbeSource::kMeasured);
  EXPECT_EQ(runs_, 4);
  ASSERT_EQ(obtainFabricProbe(moved, {0, 1, 2, 3}, options(), &p, &why), ProbeSource::kCache);
  EXPECT_EQ(runs_, 4);
}

TEST_F(FabricProbeCache, CutShortIsNotCachedAndCachedOnlyNeverRuns) {
  cut_short_ = true;
  FabricProbe p;
  std::string why;
  ASSERT_EQ(obtainFabricProbe(topo_, gpus_, options(), &p, &why), ProbeSource::kMeasured);
  EXPECT_FALSE(p.error.empty());
  FabricProbeOptions cached_only = options();
  cached_only.may_run = false;
  EXPECT_EQ(obtainFabricProbe(topo_, gpus_, cached_only, &p, &why), ProbeSource::kNone);
  EXPECT_NE(why.find("TPCOMM_FABRIC_PROBE=cached"), std::string::npos) << why;
  EXPECT_EQ(runs_, 1);
}

// One GPU: two buffers on it ({0, 0}) and that GPU with host memory only ({0}) are different
// probes: neither is taken for the other (another fabric hash, another GPU list).
TEST_F(FabricProbeCache, TwoBuffersOnOneGpuAreNotOneGpu) {
  EXPECT_NE(probeFabricHash(topo_, {0, 0}), probeFabricHash(topo_, {0}));
  FabricProbeOptions o = options();
  o.prober = [this](const std::vector<int>& gpus, int, FabricProbe* out, std::string*) {
    ++runs_;
    *out = syntheticOneGpu(2900, 3100, 1800, 1500, 1600);
    if (gpus.size() == 1) *out = FabricProbe{};  // host memory only
    out->host = {52, 50, 55, 1.38};
    return true;
  };
  FabricProbe p;
  std::string why;
  ASSERT_EQ(obtainFabricProbe(topo_, {0}, o, &p, &why), ProbeSource::kMeasured) << why;
  ASSERT_EQ(obtainFabricProbe(topo_, {0, 0}, o, &p, &why), ProbeSource::kMeasured) << why;
  EXPECT_EQ(runs_, 2);
  EXPECT_TRUE(p.sameGpu());
  ASSERT_EQ(obtainFabricProbe(topo_, {0, 0}, o, &p, &why), ProbeSource::kCache) << why;
  EXPECT_EQ(runs_, 2);
  EXPECT_EQ(p.gpus, (std::vector<int>{0, 0}));
  EXPECT_EQ(judgeFabric(p, true).verdict, FabricVerdict::kPushFine);
  ASSERT_EQ(obtainFabricProbe(topo_, {0}, o, &p, &why), ProbeSource::kMeasured) << why;
  EXPECT_EQ(runs_, 3);
  EXPECT_FALSE(p.sameGpu());
}

TEST_F(FabricProbeCache, ACorruptFileIsReplaced) {
  ASSERT_EQ(system(("mkdir -p '" + dir_ + "/sub' && chmod 700 '" + dir_ + "/sub' && echo '{' > '" +
                    dir_ + "/sub/probe.json' && chmod 600 '" + dir_ + "/sub/probe.json'")
                       .c_str()),
            0);
  FabricProbe p;
  std::string why;
  ASSERT_EQ(obtainFabricProbe(topo_, gpus_, options(), &p, &why), ProbeSource::kMeasured);
  ASSERT_EQ(obtainFabricProbe(topo_, gpus_, options(), &p, &why), ProbeSource::kCache);
  EXPECT_EQ(runs_, 1);
}

}  // namespace
}  // namespace topo
}  // namespace tpcomm
