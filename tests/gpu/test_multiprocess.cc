// One process per GPU, as inference engines run: rendezvous through the unique id, the handle
// exchange a framework does itself, and a peer that stays alive but never calls the collective.
#include <gtest/gtest.h>

#include "tests/gpu/harness.h"
#include "tests/gpu/multiprocess.h"

namespace tpcomm::test {
namespace {

void expectAllGood(const ChildRun& run, int nranks) {
  ASSERT_FALSE(run.timed_out) << "children did not finish";
  for (int r = 0; r < nranks; ++r) EXPECT_EQ(run.exit_codes[r], 0) << "rank " << r;
  ASSERT_FALSE(run.reports[0].empty());
  for (int r = 1; r < nranks; ++r)
    EXPECT_EQ(run.reports[r], run.reports[0]) << "rank " << r << " output digests differ";
}

TEST(MultiProcess, InitRankTwoRanks) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  expectAllGood(spawnChildren("correct", 2, 240), 2);
}

TEST(MultiProcess, InitRankFourRanksSharingGpus) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  expectAllGood(spawnChildren("correct", 4, 240), 4);
}

// The host-memory transport for real across processes (what a box without P2P runs).
TEST(MultiProcess, HostTransportTwoRanks) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  expectAllGood(spawnChildren("correct", 2, 240, {"TPCOMM_TRANSPORT=host"}), 2);
}

TEST(MultiProcess, HostTransportFourRanksSharingGpus) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  expectAllGood(spawnChildren("correct", 4, 240, {"TPCOMM_TRANSPORT=host"}), 4);
}

TEST(MultiProcess, HandleExchangeByTheCaller) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  expectAllGood(spawnChildren("exchange", 2, 240), 2);
}

TEST(MultiProcess, PeerThatNeverCallsGivesTimeout) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const ChildRun run = spawnChildren("deadpeer", 2, 120);
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(run.exit_codes[0], 0) << run.reports[0];
  EXPECT_EQ(run.exit_codes[1], 0);
  printf("rank 0 saw: %s", run.reports[0].c_str());
}

}  // namespace
}  // namespace tpcomm::test
