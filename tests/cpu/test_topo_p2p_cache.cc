// The per-machine P2P result cache and checkP2pHealth() with a fake tester: results are reused,
// keyed by UUIDs, a corrupt or foreign cache is ignored (and replaced), failures are not cached.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "topo/cache_dir.h"
#include "topo/p2p_cache.h"
#include "topo/topology_json.h"

namespace tpcomm {
namespace topo {
namespace {

class P2pCache : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tpcomm_p2p_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/sub/p2p.json";
    ASSERT_EQ(
        loadTopologyFile(
            std::string(TPCOMM_TEST_DATA_DIR) + "/topo/rtx_pro_6000_8x_pcie_2socket.json", &topo_),
        tpcommSuccess);
    for (int a = 0; a < topo_.size(); ++a)  // as discover() leaves it: supported, untested
      for (int b = a + 1; b < topo_.size(); ++b) {
        LinkInfo l = topo_.link(a, b);
        l.p2p_works = P2pHealth::kUnknown;
        topo_.setLink(a, b, l);
      }
  }
  void TearDown() override { ASSERT_EQ(system(("rm -rf '" + dir_ + "'").c_str()), 0); }

  // A tester that counts calls and answers from `answers` (default: works).
  P2pCheckOptions options() {
    P2pCheckOptions o;
    o.cache_path = path_;
    o.tester = [this](int a, int b, int, std::string* why) {
      ++calls_;
      const auto it = answers_.find({a, b});
      *why = "fake";
      return it == answers_.end() ? P2pHealth::kWorks : it->second;
    };
    return o;
  }

  std::string dir_, path_;
  Topology topo_;
  int calls_ = 0;
  std::map<std::pair<int, int>, P2pHealth> answers_;
};

TEST_F(P2pCache, TestsOnceThenRemembers) {
  answers_[{2, 6}] = P2pHealth::kBroken;
  ASSERT_EQ(checkP2pHealth(&topo_, {0, 1, 2, 3, 4, 5, 6, 7}, options()), tpcommSuccess);
  EXPECT_EQ(calls_, 28);
  EXPECT_EQ(topo_.link(0, 7).p2p_works, P2pHealth::kWorks);
  EXPECT_EQ(topo_.link(6, 2).p2p_works, P2pHealth::kBroken);
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  Topology again = topo_;
  again.setLink(2, 6, LinkInfo{0, PathClass::kPcieCrossSocket, true, P2pHealth::kUnknown});
  calls_ = 0;
  ASSERT_EQ(checkP2pHealth(&again, {0, 1, 2, 3, 4, 5, 6, 7}, options()), tpcommSuccess);
  EXPECT_EQ(calls_, 0);
  EXPECT_EQ(again.link(2, 6).p2p_works, P2pHealth::kBroken);

  P2pCheckOptions retest = options();
  retest.retest = true;
  answers_.clear();
  ASSERT_EQ(checkP2pHealth(&again, {2, 6}, retest), tpcommSuccess);
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(again.link(2, 6).p2p_works, P2pHealth::kWorks);
  std::vector<P2pCacheEntry> entries;
  std::string why;
  ASSERT_TRUE(readP2pCache(path_, topo_.key(), &entries, &why)) << why;
  EXPECT_EQ(entries.size(), 28u);  // replaced, not duplicated
}

TEST_F(P2pCache, KeyedByUuidNotOrdinal) {
  ASSERT_EQ(checkP2pHealth(&topo_, {0, 1}, options()), tpcommSuccess);
  EXPECT_EQ(calls_, 1);
  // The same two GPUs under swapped ordinals (CUDA_VISIBLE_DEVICES=1,0,...).
  Topology swapped = topo_;
  std::swap(swapped.gpus[0].uuid, swapped.gpus[1].uuid);
  ASSERT_EQ(swapped.key(), topo_.key());
  ASSERT_EQ(checkP2pHealth(&swapped, {1, 0}, options()), tpcommSuccess);
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(swapped.link(0, 1).p2p_works, P2pHealth::kWorks);
}

TEST_F(P2pCache, OnlyPairsOfTheRanksAndOnlySupportedPairsAreTested) {
  topo_.setLink(0, 1, LinkInfo{0, PathClass::kPcieSameSwitch, false, P2pHealth::kUnknown});
  ASSERT_EQ(checkP2pHealth(&topo_, {0, 1, 1, 2}, options()), tpcommSuccess);
  EXPECT_EQ(calls_, 2);  // 0-2 and 1-2; 0-1 is not supported
  EXPECT_EQ(topo_.link(0, 1).p2p_works, P2pHealth::kNotTested);
  EXPECT_EQ(topo_.link(0, 3).p2p_works, P2pHealth::kUnknown);  // not among the ranks
}

TEST_F(P2pCache, FailedTestsAreNotCached) {
  answers_[{0, 1}] = P2pHealth::kUnknown;  // e.g. out of memory: says nothing about P2P
  ASSERT_EQ(checkP2pHealth(&topo_, {0, 1}, options()), tpcommSuccess);
  EXPECT_EQ(topo_.link(0, 1).p2p_works, P2pHealth::kUnknown);
  struct stat st;
  EXPECT_NE(stat(path_.c_str(), &st), 0);
  ASSERT_EQ(checkP2pHealth(&topo_, {0, 1}, options()), tpcommSuccess);
  EXPECT_EQ(calls_, 2);
}

TEST_F(P2pCache, CorruptOrForeignCacheIsIgnoredAndReplaced) {
  const char* const bad[] = {
      "{\"tpcomm_p2p_cache\": 1, \"topology_key\": \"",  // truncated
      "not json",
      "{\"tpcomm_p2p_cache\": 2, \"topology_key\": \"x\", \"pairs\": []}",
      "{\"tpcomm_p2p_cache\": 1, \"topology_key\": \"8gpu-0000000000000000\", \"pairs\": []}",
  };
  for (const char* text : bad) {
    ASSERT_EQ(writeTextFileAtomic(path_, text), tpcommSuccess);
    std::vector<P2pCacheEntry> entries;
    std::string why;
    EXPECT_FALSE(readP2pCache(path_, topo_.key(), &entries, &why)) << text;
    EXPECT_FALSE(why.empty());
    calls_ = 0;
    ASSERT_EQ(checkP2pHealth(&topo_, {4, 5}, options()), tpcommSuccess);
    EXPECT_EQ(calls_, 1) << text;
    EXPECT_TRUE(readP2pCache(path_, topo_.key(), &entries, &why)) << why;  // rewritten
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].result, P2pHealth::kWorks);
  }
}

TEST_F(P2pCache, ForgedEntriesAreRejected) {
  const std::string key = topo_.key();
  auto rejected = [&](const std::string& pairs) {
    const std::string text =
        "{\"tpcomm_p2p_cache\": 1, \"topology_key\": \"" + key + "\", \"pairs\": [" + pairs + "]}";
    EXPECT_EQ(writeTextFileAtomic(path_, text), tpcommSuccess);
    std::vector<P2pCacheEntry> entries;
    std::string why;
    EXPECT_FALSE(readP2pCache(path_, key, &entries, &why)) << pairs;
    EXPECT_TRUE(entries.empty());
    return why;
  };
  EXPECT_NE(rejected("{\"uuids\": [\"GPU-b\", \"GPU-a\"], \"result\": \"works\", \"why\": \"\"}")
                .find("sorted"),
            std::string::npos);
  EXPECT_NE(rejected("{\"uuids\": [\"GPU-a\", \"GPU-b\"], \"result\": \"unknown\", \"why\": \"\"}")
                .find("pairs[0].result"),
            std::string::npos);
  EXPECT_NE(rejected("{\"uuids\": [\"GPU-a\", \"GPU-b\"], \"result\": \"works\"}").find("why"),
            std::string::npos);
}

TEST_F(P2pCache, NoCacheWhenDisabled) {
  P2pCheckOptions o = options();
  o.use_cache = false;
  ASSERT_EQ(checkP2pHealth(&topo_, {0, 1}, o), tpcommSuccess);
  ASSERT_EQ(checkP2pHealth(&topo_, {0, 1}, o), tpcommSuccess);
  EXPECT_EQ(calls_, 2);
  struct stat st;
  EXPECT_NE(stat(path_.c_str(), &st), 0);
}

TEST_F(P2pCache, InvalidGpuIndex) {
  EXPECT_EQ(checkP2pHealth(&topo_, {0, 8}, options()), tpcommInvalidArgument);
  EXPECT_EQ(calls_, 0);
}

TEST(TopoCacheDir, FollowsXdgThenHome) {
  const char* old_xdg = getenv("XDG_CACHE_HOME");
  const char* old_home = getenv("HOME");
  const std::string saved_xdg = old_xdg ? old_xdg : "", saved_home = old_home ? old_home : "";
  setenv("XDG_CACHE_HOME", "/x/cache", 1);
  EXPECT_EQ(userCacheDir(), "/x/cache/tpcomm");
  setenv("XDG_CACHE_HOME", "relative", 1);  // not absolute: ignored, as the XDG spec says
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(userCacheDir(), "/home/u/.cache/tpcomm");
  Topology t;
  t.resize(1);
  t.gpus[0].uuid = "GPU-x";
  EXPECT_EQ(p2pCachePath(t), "/home/u/.cache/tpcomm/p2p-" + t.key() + ".json");
  if (old_xdg)
    setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  else
    unsetenv("XDG_CACHE_HOME");
  if (old_home)
    setenv("HOME", saved_home.c_str(), 1);
  else
    unsetenv("HOME");
}

TEST(TopoCacheDir, ReadRejectsMissingAndOversizedFiles) {
  std::string text, why;
  bool missing = false;
  EXPECT_FALSE(readTextFile("/nonexistent/x.json", &text, &why, 100, &missing));
  EXPECT_TRUE(missing);
  EXPECT_FALSE(readTextFile("/proc/self", &text, &why, 100, &missing));  // a folder
  EXPECT_FALSE(missing);
  char tmpl[] = "/tmp/tpcomm_big_XXXXXX";
  const int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "0123456789", 10), 10);
  close(fd);
  EXPECT_FALSE(readTextFile(tmpl, &text, &why, 5));
  EXPECT_NE(why.find("larger than 5 bytes"), std::string::npos);
  EXPECT_TRUE(readTextFile(tmpl, &text, &why, 10));
  EXPECT_EQ(text, "0123456789");
  unlink(tmpl);
}

}  // namespace
}  // namespace topo
}  // namespace tpcomm
