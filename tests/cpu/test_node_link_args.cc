// The calls of communicators across machines without a GPU: argument checks of the new entry
// points, the global rank and size a spanning communicator reports, collectives refused until it
// is linked, the second exchange's handle checks, and Explain naming the legs.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/lifecycle/registry.h"
#include "common/error.h"
#include "plan/knobs.h"  // wireCodecName
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

bool says(const char* word) {
  return std::string(lastError()).find(word) != std::string::npos;
}

// A registered communicator object that was never initialised: enough for the checks that come
// before any CUDA call. spanning: global rank 3 of 4 on two machines of two ranks.
struct FakeComm {
  tpcommComm* c = createComm();
  explicit FakeComm(bool spanning) {
    c->state = CommState::kReady;
    c->world = 2;
    c->rank = 1;
    c->fabric = Fabric::kNvlink;
    c->slots = factsFor(2, Fabric::kNvlink).slots;
    if (!spanning) return;
    c->span = std::make_unique<NodeSpan>();
    NodeLayout& l = c->span->layout;
    l.nodes = 2;
    l.local_ranks = 2;
    l.node = 1;
    l.local = 1;
    l.node_of = {0, 0, 1, 1};
    l.local_of = {0, 1, 0, 1};
    l.members = {2, 3};
    l.leaders = {0, 1};
    c->span->global_rank = 3;
    c->span->global_world = 4;
  }
  ~FakeComm() { tpcommCommDestroy(c); }
};

TEST(NodeLinkArgs, NullArgumentsAreRefusedByName) {
  FakeComm one(false);
  int a = 0, b = 0;
  uint64_t calls = 0;
  tpcommRankHandle h;
  EXPECT_EQ(tpcommCommNodes(nullptr, &a, &b), tpcommInvalidArgument);
  EXPECT_TRUE(says("tpcommCommNodes: comm is NULL")) << lastError();
  EXPECT_EQ(tpcommCommNodes(one.c, nullptr, &b), tpcommInvalidArgument);
  EXPECT_TRUE(says("nodes or localRanks is NULL")) << lastError();
  EXPECT_EQ(tpcommCommGetNodeLinkCalls(one.c, nullptr), tpcommInvalidArgument);
  EXPECT_TRUE(says("calls is NULL")) << lastError();
  EXPECT_EQ(tpcommCommNodeLinkBegin(nullptr, &h), tpcommInvalidArgument);
  EXPECT_EQ(tpcommCommNodeLinkBegin(one.c, nullptr), tpcommInvalidArgument);
  EXPECT_TRUE(says("myHandle is NULL")) << lastError();
  EXPECT_EQ(tpcommCommNodeLinkEnd(one.c, nullptr), tpcommInvalidArgument);
  EXPECT_TRUE(says("allHandles is NULL")) << lastError();
  EXPECT_EQ(tpcommCommGetNodeLinkCalls(one.c, &calls), tpcommSuccess);
  EXPECT_EQ(calls, 0u);
}

TEST(NodeLinkArgs, OneMachineHasNothingToLink) {
  FakeComm one(false);
  int nodes = 0, local = 0;
  ASSERT_EQ(tpcommCommNodes(one.c, &nodes, &local), tpcommSuccess) << lastError();
  EXPECT_EQ(nodes, 1);
  EXPECT_EQ(local, 2);
  tpcommRankHandle h;
  EXPECT_EQ(tpcommCommNodeLinkBegin(one.c, &h), tpcommInvalidUsage);
  EXPECT_TRUE(says("on one machine: there is nothing to link")) << lastError();
  std::vector<tpcommRankHandle> all(2);
  EXPECT_EQ(tpcommCommNodeLinkEnd(one.c, all.data()), tpcommInvalidUsage);
  EXPECT_TRUE(says("nothing to link")) << lastError();
}

TEST(NodeLinkArgs, ASpanningCommunicatorReportsGlobalRanksAndNodes) {
  FakeComm span(true);
  int n = 0, r = 0, nodes = 0, local = 0;
  ASSERT_EQ(tpcommCommCount(span.c, &n), tpcommSuccess);
  ASSERT_EQ(tpcommCommUserRank(span.c, &r), tpcommSuccess);
  ASSERT_EQ(tpcommCommNodes(span.c, &nodes, &local), tpcommSuccess);
  EXPECT_EQ(n, 4);
  EXPECT_EQ(r, 3);
  EXPECT_EQ(nodes, 2);
  EXPECT_EQ(local, 2);
}

TEST(NodeLinkArgs, CollectivesAreRefusedUntilLinked) {
  FakeComm span(true);
  alignas(16) static char buf[4096];
  EXPECT_EQ(tpcommAllReduce(buf, buf, 16, tpcommFloat32, tpcommSum, span.c, nullptr),
            tpcommInvalidUsage);
  EXPECT_TRUE(
      says("tpcommAllReduce: rank 3's communicator spans 2 machines and is not linked: "
           "call tpcommCommNodeLinkBegin/End first"))
      << lastError();
  EXPECT_EQ(tpcommReduceScatter(buf, buf, 4, tpcommFloat32, span.c, nullptr), tpcommInvalidUsage);
  EXPECT_TRUE(says("tpcommReduceScatter: rank 3's communicator spans 2 machines and is not linked"))
      << lastError();
  EXPECT_EQ(tpcommAllGather(buf, buf, 4, tpcommBfloat16, span.c, nullptr), tpcommInvalidUsage);
  EXPECT_TRUE(says("not linked")) << lastError();
}

// tpcommAllReduceWire on a communicator across machines: a codec is refused by name (none runs
// across machines), an unknown one is an invalid argument, and -1 / 0 take the spanning
// all-reduce's own path (here: refused until linked, as tpcommAllReduce is).
TEST(NodeLinkArgs, TheWireEntryPointRefusesACodecAcrossMachines) {
  FakeComm span(true);
  alignas(16) static char buf[4096];
  for (int wire = 1; wire <= 4; ++wire) {
    EXPECT_EQ(tpcommAllReduceWire(buf, buf, 16, tpcommBfloat16, tpcommSum, wire, span.c, nullptr),
              tpcommUnsupported)
        << "wire " << wire;
    EXPECT_TRUE(says("on a communicator spanning machines")) << lastError();
    EXPECT_TRUE(says(wireCodecName(wire))) << lastError();
  }
  EXPECT_EQ(tpcommAllReduceWire(buf, buf, 16, tpcommBfloat16, tpcommSum, 5, span.c, nullptr),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("wire 5 is none of")) << lastError();
  for (int wire : {-1, 0}) {
    EXPECT_EQ(tpcommAllReduceWire(buf, buf, 16, tpcommBfloat16, tpcommSum, wire, span.c, nullptr),
              tpcommInvalidUsage)
        << "wire " << wire;
    EXPECT_TRUE(says("spans 2 machines and is not linked")) << lastError();
  }
}
TEST(NodeLinkArgs, EndBeforeBeginAndForeignHandlesAreRefused) {
  FakeComm span(true);
  std::vector<tpcommRankHandle> all(4);
  memset(all.data(), 0, all.size() * sizeof(tpcommRankHandle));
  EXPECT_EQ(tpcommCommNodeLinkEnd(span.c, all.data()), tpcommInvalidUsage);
  EXPECT_TRUE(says("rank 3: call tpcommCommNodeLinkBegin first")) << lastError();
  span.c->span->link_begun = true;  // as Begin leaves it
  EXPECT_EQ(tpcommCommNodeLinkEnd(span.c, all.data()), tpcommInvalidArgument);
  EXPECT_TRUE(says("link handle 0 was not made by tpcommCommNodeLinkBegin")) << lastError();
  // First-round handles are not link handles either.
  tpcommRankHandle first;
  memset(&first, 0x5a, sizeof(first));
  all[0] = first;
  EXPECT_EQ(tpcommCommNodeLinkEnd(span.c, all.data()), tpcommInvalidArgument);
  EXPECT_TRUE(says("link handle 0")) << lastError();
}

TEST(NodeLinkArgs, ExplainNamesTheLegs) {
  FakeComm span(true);
  tpcommCallInfo_t info;
  ASSERT_EQ(tpcommCommExplain(span.c, 1 << 20, tpcommBfloat16, &info), tpcommSuccess)
      << lastError();
  const std::string large = info.reason;
  EXPECT_EQ(large.rfind("hierarchical (large: 2097152 B > node_small_bytes 65536): ", 0), 0u)
      << large;
  EXPECT_NE(large.find("reduce_scatter -> nccl all_reduce over 2 nodes -> "), std::string::npos)
      << large;
  EXPECT_NE(large.find("all_gather"), std::string::npos) << large;
  EXPECT_EQ(info.bytes, 2u << 20);
  EXPECT_EQ(info.variant, tpcommVariantP2pReduceScatter) << tpcommVariantName(info.variant);

  ASSERT_EQ(tpcommCommExplain(span.c, 512, tpcommFloat32, &info), tpcommSuccess) << lastError();
  const std::string small = info.reason;
  EXPECT_EQ(small.rfind("hierarchical (small: 2048 B <= node_small_bytes 65536): p2p_oneshot", 0),
            0u)
      << small;
  EXPECT_NE(small.find(" -> nccl all_reduce over 2 nodes"), std::string::npos) << small;

  ASSERT_EQ(tpcommCommExplainCollective(span.c, tpcommCollReduceScatter, 256, tpcommFloat32, &info),
            tpcommSuccess)
      << lastError();
  EXPECT_EQ(info.bytes, 4u * 256 * 4);  // world 4: the global message
  EXPECT_NE(std::string(info.reason).find("per node -> nccl reduce_scatter over 2 nodes"),
            std::string::npos)
      << info.reason;

  span.c->span->layout.contiguous = false;
  EXPECT_EQ(tpcommCommExplainCollective(span.c, tpcommCollAllGather, 256, tpcommFloat32, &info),
            tpcommUnsupported);
  EXPECT_TRUE(says("consecutive global ranks")) << lastError();
  // The all-reduce does not care how the ranks are numbered.
  EXPECT_EQ(tpcommCommExplain(span.c, 256, tpcommFloat32, &info), tpcommSuccess) << lastError();
}

}  // namespace
}  // namespace tpcomm

namespace tpcomm {
namespace {

// Begin takes a world of several machines (1..8 ranks each, checked at End); the socket
// rendezvous and tpcommCommInitAll stay at one machine's 1..8.
TEST(NodeLinkArgs, BeginTakesMoreRanksThanOneMachineHolds) {
  tpcommComm_t c = nullptr;
  tpcommRankHandle h;
  const tpcommResult_t r = tpcommCommInitRankBegin(&c, 16, 3, nullptr, &h);
  EXPECT_NE(r, tpcommInvalidArgument) << lastError();  // no GPU here: tpcommNoDevice
  if (r == tpcommSuccess) tpcommCommDestroy(c);
  EXPECT_EQ(tpcommCommInitRankBegin(&c, TPCOMM_MAX_GLOBAL_RANKS + 1, 0, nullptr, &h),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("nranks=1025, tpcomm supports 1..1024 ranks (1..8 on each machine)"))
      << lastError();
  tpcommUniqueId id{};
  EXPECT_EQ(tpcommCommInitRank(&c, 16, id, 0, nullptr), tpcommInvalidArgument);
  EXPECT_TRUE(says("tpcommCommInitRank: nranks=16, tpcomm supports 1..8 ranks")) << lastError();
}

}  // namespace
}  // namespace tpcomm
