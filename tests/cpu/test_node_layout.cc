// Communicators across machines without a GPU: the ranks grouped by host id from synthetic handle
// tables (machines of unequal size refused, local index order, the leaders that make the NCCL
// ids), the local group's handles, and the host id itself.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/lifecycle/host_id.h"
#include "comm/node/node_layout.h"
#include "common/env.h"
#include "common/error.h"

namespace tpcomm {
namespace {

bool says(const char* word) {
  return std::string(lastError()).find(word) != std::string::npos;
}

// One handle per entry of `hosts`: rank r on machine hosts[r].
std::vector<RankInfo> table(const std::vector<const char*>& hosts) {
  std::vector<RankInfo> v(hosts.size());
  for (size_t r = 0; r < hosts.size(); ++r) {
    memset(&v[r], 0, sizeof(RankInfo));
    v[r].rank = static_cast<int>(r);
    v[r].nranks = static_cast<int>(hosts.size());
    v[r].pid = 100 + static_cast<int>(r);
    snprintf(v[r].host_id, sizeof(v[r].host_id), "%s", hosts[r]);
    snprintf(v[r].boot_id, sizeof(v[r].boot_id), "boot-%s", hosts[r]);
  }
  return v;
}

TEST(NodeLayout, OneMachineIsOneNode) {
  const auto v = table({"a", "a", "a"});
  NodeLayout l;
  ASSERT_EQ(groupByHost(v.data(), 3, 2, &l), tpcommSuccess) << lastError();
  EXPECT_EQ(l.nodes, 1);
  EXPECT_EQ(l.local_ranks, 3);
  EXPECT_EQ(l.local, 2);
  EXPECT_TRUE(l.contiguous);
}

TEST(NodeLayout, MachinesInOrderOfTheirFirstRankAndLocalIndicesInRankOrder) {
  // Interleaved: machine "b" holds ranks 0 and 2, machine "a" ranks 1 and 3.
  const auto v = table({"b", "a", "b", "a"});
  NodeLayout l;
  ASSERT_EQ(groupByHost(v.data(), 4, 3, &l), tpcommSuccess) << lastError();
  EXPECT_EQ(l.nodes, 2);
  EXPECT_EQ(l.local_ranks, 2);
  EXPECT_EQ(l.node, 1);  // "a" is node 1: node 0 is rank 0's machine
  EXPECT_EQ(l.local, 1);
  EXPECT_EQ(l.node_of, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(l.local_of, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(l.members, (std::vector<int>{1, 3}));
  EXPECT_EQ(l.leaders, (std::vector<int>{0, 2}));  // node 0's rank of each local index
  EXPECT_FALSE(l.contiguous);
}

TEST(NodeLayout, TorchrunNumberingIsContiguous) {
  const auto v = table({"a", "a", "b", "b", "c", "c"});
  NodeLayout l;
  ASSERT_EQ(groupByHost(v.data(), 6, 4, &l), tpcommSuccess) << lastError();
  EXPECT_EQ(l.nodes, 3);
  EXPECT_EQ(l.node, 2);
  EXPECT_EQ(l.local, 0);
  EXPECT_EQ(l.members, (std::vector<int>{4, 5}));
  EXPECT_EQ(l.leaders, (std::vector<int>{0, 1}));
  EXPECT_TRUE(l.contiguous);
}

TEST(NodeLayout, UnevenMachinesAreRefusedNamingTheCounts) {
  const auto v = table({"a", "a", "a", "b"});
  NodeLayout l;
  EXPECT_EQ(groupByHost(v.data(), 4, 0, &l), tpcommInvalidArgument);
  EXPECT_TRUE(says("same number of ranks")) << lastError();
  EXPECT_TRUE(says("rank 0 (host id a) holds 3")) << lastError();
  EXPECT_TRUE(says("rank 3 (host id b) holds 1")) << lastError();
}

TEST(NodeLayout, MoreThanEightRanksOnAMachineAreRefused) {
  std::vector<const char*> hosts(18, "a");
  for (int r = 9; r < 18; ++r) hosts[r] = "b";
  const auto v = table(hosts);
  NodeLayout l;
  EXPECT_EQ(groupByHost(v.data(), 18, 0, &l), tpcommInvalidArgument);
  EXPECT_TRUE(says("9 ranks on the machine of rank 0")) << lastError();
  EXPECT_TRUE(says("1..8 ranks per machine")) << lastError();
}

TEST(NodeLayout, OneHostIdWithTwoBootIdsIsTwoMachinesMisnamed) {
  auto v = table({"a", "a"});
  snprintf(v[1].boot_id, sizeof(v[1].boot_id), "another-boot");
  NodeLayout l;
  EXPECT_EQ(groupByHost(v.data(), 2, 0, &l), tpcommInvalidArgument);
  EXPECT_TRUE(says("ranks 0 and 1 give one host id (a) but different boot ids")) << lastError();
  EXPECT_TRUE(says("TPCOMM_HOST_ID must differ")) << lastError();
}

TEST(NodeLayout, LocalHandlesAreTheMachinesRanksRenumbered) {
  auto v = table({"a", "b", "a", "b"});
  v[0].nccl_wanted = 1;
  NodeLayout l;
  ASSERT_EQ(groupByHost(v.data(), 4, 0, &l), tpcommSuccess) << lastError();
  const std::vector<RankInfo> local = localHandles(v.data(), l);
  ASSERT_EQ(local.size(), 2u);
  EXPECT_EQ(local[0].pid, 100);  // global rank 0
  EXPECT_EQ(local[1].pid, 102);  // global rank 2
  EXPECT_EQ(local[1].rank, 1);
  EXPECT_EQ(local[0].nranks, 2);
  EXPECT_EQ(local[0].nccl_wanted, 0);  // no local fallback on a spanning communicator
}

TEST(HostId, TheOverrideWinsElseTheBootIdTellsMachinesApart) {
  EXPECT_EQ(hostIdFrom("node-7", "boot", "host"), "node-7");
  const std::string a = hostIdFrom("", "boot-1", "host");
  EXPECT_EQ(a, hostIdFrom("", "boot-1", "host"));  // stable
  EXPECT_NE(a, hostIdFrom("", "boot-2", "host"));  // cloned image, another kernel
  // Containers of one machine have their own hostnames but one kernel: one machine.
  EXPECT_EQ(a, hostIdFrom("", "boot-1", "container-2"));
  // Without a boot id, the hostname tells them apart.
  EXPECT_NE(hostIdFrom("", "", "host"), hostIdFrom("", "", "host2"));
  EXPECT_NE(hostIdFrom("", "", "host"), a);
  EXPECT_LT(a.size(), kHostIdBytes);
  EXPECT_FALSE(a.empty());
}

TEST(HostId, TheEnvironmentVariableIsReadAndBoundedInLength) {
  std::string value = "sim-node-1";
  auto lookup = [&](const char* name) -> const char* {
    return std::string(name) == "TPCOMM_HOST_ID" ? value.c_str() : nullptr;
  };
  Env e = parseEnvironment(lookup);
  EXPECT_TRUE(e.errors.empty());
  EXPECT_EQ(e.host_id, "sim-node-1");
  value = std::string(64, 'x');
  e = parseEnvironment(lookup);
  ASSERT_EQ(e.errors.size(), 1u);
  EXPECT_NE(e.errors[0].find("at most 63 characters"), std::string::npos) << e.errors[0];
}

}  // namespace
}  // namespace tpcomm
