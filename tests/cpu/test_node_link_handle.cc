// The second exchange's handles (comm/node/node_link_handle.h): well-formed tables pass, and every
// corruption a framework's all-gather could bring is refused naming the rank: a foreign handle,
// the wrong order, another layout, a leader that offers no id, knobs that differ, and this
// rank's own handle changed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/node/node_link_handle.h"
#include "common/error.h"

namespace tpcomm {
namespace {

bool says(const char* word) {
  return std::string(lastError()).find(word) != std::string::npos;
}

// Rank r of 2 machines x 2 ranks, numbered as torchrun does.
NodeSpan spanOf(int r) {
  NodeSpan sp;
  NodeLayout& l = sp.layout;
  l.nodes = 2;
  l.local_ranks = 2;
  l.node_of = {0, 0, 1, 1};
  l.local_of = {0, 1, 0, 1};
  l.leaders = {0, 1};
  l.node = l.node_of[r];
  l.local = l.local_of[r];
  sp.global_rank = r;
  sp.global_world = 4;
  sp.offers_id = l.leaders[l.local] == r;
  if (sp.offers_id) sp.nccl_id[0] = static_cast<char>(0x40 + r);
  return sp;
}

std::vector<LinkInfo> infos() {
  std::vector<LinkInfo> v;
  for (int r = 0; r < 4; ++r) v.push_back(makeLinkInfo(spanOf(r), 65536));
  return v;
}

tpcommResult_t check(int me, const std::vector<LinkInfo>& v) {
  std::vector<tpcommRankHandle> h(v.size());
  for (size_t r = 0; r < v.size(); ++r) packLinkInfo(v[r], &h[r]);
  return checkLinkHandles(spanOf(me), v[static_cast<size_t>(me)], h.data());
}

TEST(NodeLinkHandle, AWellFormedTablePassesOnEveryRank) {
  for (int me = 0; me < 4; ++me) EXPECT_EQ(check(me, infos()), tpcommSuccess) << lastError();
}

TEST(NodeLinkHandle, EveryCorruptionIsRefusedNamingTheRank) {
  std::vector<LinkInfo> v = infos();
  v[2].magic = 0;
  EXPECT_EQ(check(0, v), tpcommInvalidArgument);
  EXPECT_TRUE(says("link handle 2 was not made by tpcommCommNodeLinkBegin")) << lastError();

  v = infos();
  std::swap(v[1], v[3]);
  EXPECT_EQ(check(0, v), tpcommInvalidArgument);
  EXPECT_TRUE(says("position 1 holds rank 3's")) << lastError();

  v = infos();
  v[3].node = 0;  // another layout: handles of another communicator
  EXPECT_EQ(check(0, v), tpcommInvalidArgument);
  EXPECT_TRUE(says("link handle 3 says nranks 4, node 0")) << lastError();

  v = infos();
  v[1].offers_id = 0;  // the leader of local index 1 must offer its id
  EXPECT_EQ(check(2, v), tpcommInvalidArgument);
  EXPECT_TRUE(says("link handle 1")) << lastError();
  EXPECT_TRUE(says("offers an id 0")) << lastError();

  v = infos();
  v[3].small_bytes = 4096;
  EXPECT_EQ(check(0, v), tpcommRemoteError);
  EXPECT_TRUE(says("rank 3's knob node_small_bytes=4096 differs")) << lastError();

  v = infos();
  const LinkInfo mine = v[1];
  v[1].nccl_id[0] = 'x';  // only the id changed: passes every field check
  std::vector<tpcommRankHandle> h(4);
  for (size_t r = 0; r < 4; ++r) packLinkInfo(v[r], &h[r]);
  EXPECT_EQ(checkLinkHandles(spanOf(1), mine, h.data()), tpcommInvalidArgument);
  EXPECT_TRUE(says("allHandles[1] is not the handle this rank produced")) << lastError();
}

TEST(NodeLinkHandle, OnlyLeadersCarryAnId) {
  const std::vector<LinkInfo> v = infos();
  EXPECT_EQ(v[0].offers_id, 1);
  EXPECT_EQ(v[1].offers_id, 1);
  EXPECT_EQ(v[2].offers_id, 0);
  EXPECT_EQ(v[3].offers_id, 0);
  EXPECT_EQ(v[1].nccl_id[0], 0x41);
  EXPECT_EQ(v[3].nccl_id[0], 0);
}

}  // namespace
}  // namespace tpcomm
