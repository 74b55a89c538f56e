// Files tpcomm acts on (the tuning table, the P2P cache) are planted nowhere: a symlink, a file of
// another user, a file or folder others may write, a FIFO or an oversized file is refused with a
// warning that names the file and the reason, and the built-in defaults (or a fresh P2P test) are
// used instead. What tpcomm writes there is for the user only.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "plan/tuning_table.h"
#include "topo/cache_dir.h"
#include "topo/p2p_cache.h"
#include "topo/topology_json.h"

namespace tpcomm {
namespace {

const char kKey[] = "2gpu-0123456789abcdef";
const char kTable[] = R"({"tpcomm_tuning": 1, "topology_key": "2gpu-0123456789abcdef",
  "fabric": "nvlink", "tables": [{"world": 2, "rules": [{"max_bytes": "inf", "algo": "nccl"}]}]})";
constexpr uid_t kNobody = 65534;

class TrustedFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tpcomm_trust_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/cache";
    table_ = dir_ + "/tuning.json";
    ASSERT_EQ(topo::writeTextFileAtomic(table_, kTable), tpcommSuccess);
  }
  void TearDown() override { ASSERT_EQ(system(("rm -rf '" + root_ + "'").c_str()), 0); }

  // Loads `path`; expects it refused with a warning naming it and containing `reason`.
  void expectRefused(const std::string& path, const std::string& reason) {
    TuningTable t;
    std::string why;
    testing::internal::CaptureStderr();
    const TuningLoad r = loadTuningTable(path, kKey, &t, &why);
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_EQ(r, TuningLoad::kRejected) << path;
    EXPECT_TRUE(t.tables.empty()) << "the planted table was used: " << path;
    EXPECT_NE(why.find(reason), std::string::npos) << why;
    EXPECT_NE(log.find("WARN TUNING ignoring tuning table " + path), std::string::npos) << log;
    EXPECT_NE(log.find(reason), std::string::npos) << log;
    EXPECT_NE(log.find("built-in defaults"), std::string::npos) << log;
  }

  std::string root_, dir_, table_;
};

TEST_F(TrustedFiles, OwnFileIsLoaded) {
  TuningTable t;
  std::string why;
  ASSERT_EQ(loadTuningTable(table_, kKey, &t, &why), TuningLoad::kLoaded) << why;
  EXPECT_EQ(t.tableFor(2)->back().algo, tpcommAlgoNccl);
  // A sticky folder others may write (like /tmp) is fine: they cannot replace our files there.
  ASSERT_EQ(chmod(dir_.c_str(), 01777), 0);
  ASSERT_EQ(loadTuningTable(table_, kKey, &t, &why), TuningLoad::kLoaded) << why;
}

TEST_F(TrustedFiles, SymlinkIsRefused) {
  const std::string link = dir_ + "/link.json";
  ASSERT_EQ(symlink(table_.c_str(), link.c_str()), 0);
  expectRefused(link, "is a symbolic link");
}

TEST_F(TrustedFiles, FileOthersMayWriteIsRefused) {
  ASSERT_EQ(chmod(table_.c_str(), 0666), 0);
  expectRefused(table_, "writable by others (mode 0666)");
  ASSERT_EQ(chmod(table_.c_str(), 0620), 0);
  expectRefused(table_, "writable by its group (mode 0620)");
}

TEST_F(TrustedFiles, FolderOthersMayWriteIsRefused) {
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
  expectRefused(table_, "folder " + dir_ + " is writable by others (mode 0777)");
}

TEST_F(TrustedFiles, FileOrFolderOfAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "giving a file to another user (chown) needs root";
  ASSERT_EQ(chown(table_.c_str(), kNobody, kNobody), 0);
  expectRefused(table_, "is owned by uid 65534");
  ASSERT_EQ(chown(table_.c_str(), 0, 0), 0);
  ASSERT_EQ(chown(dir_.c_str(), kNobody, kNobody), 0);
  expectRefused(table_, "folder " + dir_ + " is owned by uid 65534");
}

TEST_F(TrustedFiles, FifoAndOversizedFilesAreRefused) {
  const std::string fifo = dir_ + "/fifo.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expectRefused(fifo, "is not a regular file");  // and opening it did not block
  const std::string big = dir_ + "/big.json";
  ASSERT_EQ(topo::writeTextFileAtomic(big, std::string((1u << 20) + 1, ' ')), tpcommSuccess);
  expectRefused(big, "is larger than 1048576 bytes");
}

TEST_F(TrustedFiles, WrittenFilesAreUserOnly) {
  TuningTable t;
  std::string why;
  ASSERT_TRUE(parseTuningTable(kTable, kKey, &t, &why)) << why;
  const std::string path = root_ + "/new/folder/tuning.json";
  ASSERT_EQ(saveTuningTable(path, t), tpcommSuccess);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((root_ + "/new/folder").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // Nothing is written into a folder others may write: it would not be trusted when read.
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
  EXPECT_EQ(saveTuningTable(dir_ + "/other.json", t), tpcommSystemError);
  EXPECT_NE(std::string(tpcommGetLastError()).find("writable by others"), std::string::npos)
      << tpcommGetLastError();
}

// A planted P2P cache that calls a working pair broken is not used: the pair is tested again.
TEST_F(TrustedFiles, PlantedP2pCacheIsNotUsed) {
  topo::Topology topo;
  ASSERT_EQ(
      topo::loadTopologyFile(
          std::string(TPCOMM_TEST_DATA_DIR) + "/topo/rtx_pro_6000_8x_pcie_2socket.json", &topo),
      tpcommSuccess);
  topo::LinkInfo l = topo.link(0, 1);
  l.p2p_works = topo::P2pHealth::kUnknown;
  topo.setLink(0, 1, l);
  const std::string planted = dir_ + "/planted.json";
  ASSERT_EQ(topo::writeP2pCache(planted, topo.key(),
                                {{std::min(topo.gpus[0].uuid, topo.gpus[1].uuid),
                                  std::max(topo.gpus[0].uuid, topo.gpus[1].uuid),
                                  topo::P2pHealth::kBroken, "planted"}}),
            tpcommSuccess);
  const std::string cache = dir_ + "/p2p.json";
  ASSERT_EQ(symlink(planted.c_str(), cache.c_str()), 0);
  int calls = 0;
  topo::P2pCheckOptions o;
  o.cache_path = cache;
  o.tester = [&calls](int, int, int, std::string* why) {
    ++calls;
    *why = "fake";
    return topo::P2pHealth::kWorks;
  };
  testing::internal::CaptureStderr();
  ASSERT_EQ(topo::checkP2pHealth(&topo, {0, 1}, o), tpcommSuccess);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(topo.link(0, 1).p2p_works, topo::P2pHealth::kWorks);
  EXPECT_NE(log.find("ignoring the P2P cache " + cache), std::string::npos) << log;
  EXPECT_NE(log.find("is a symbolic link"), std::string::npos) << log;
}

}  // namespace
}  // namespace tpcomm
