// Rank handles come from the framework's all-gather (tpcommCommInitRankEnd): every string field
// must be NUL-terminated and every field in range before anything reads it, with an error that
// names the rank and the field.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm/lifecycle/rank_info.h"
#include "common/error.h"

namespace tpcomm {
namespace {

RankInfo validInfo(int rank, int nranks) {
  RankInfo i{};
  i.magic = kInfoMagic;
  i.version = kInfoVersion;
  i.rank = rank;
  i.nranks = nranks;
  i.pid = 1000 + rank;
  i.device = rank;
  i.cc_major = 9;
  i.cc_minor = 0;
  snprintf(i.boot_id, sizeof(i.boot_id), "%s", "6f1c2a5e-0000-4000-8000-000000000000");
  snprintf(i.host_id, sizeof(i.host_id), "%s", "h0123456789abcdef");
  snprintf(i.pci_bus_id, sizeof(i.pci_bus_id), "0000:%02x:00.0", 0x18 + rank);
  snprintf(i.pci_bus_id_norm, sizeof(i.pci_bus_id_norm), "0000:%02x:00.0", 0x18 + rank);
  i.slot_bytes = 16u << 20;
  i.timeout_ms = 5000;
  i.algo = -1;
  if (rank == 0) snprintf(i.host_shm, sizeof(i.host_shm), "%s", "/tpcomm-0123abcd");
  i.view.count = 2;
  for (int g = 0; g < 2; ++g) {
    snprintf(i.view.gpus[g].bus, sizeof(i.view.gpus[g].bus), "0000:%02x:00.0", 0x18 + g);
    i.view.gpus[g].access = 1;
    i.view.gpus[g].path = 1;
  }
  return i;
}

// Unpacks two handles, rank 1's changed by `corrupt`; the result and the error text.
tpcommResult_t unpackWith(const std::function<void(RankInfo&)>& corrupt, std::string* error) {
  std::vector<RankInfo> infos = {validInfo(0, 2), validInfo(1, 2)};
  corrupt(infos[1]);
  std::vector<tpcommRankHandle> handles(2);
  for (int r = 0; r < 2; ++r) packHandle(infos[r], &handles[r]);
  // The bytes after RankInfo in the handle are non-zero too, so an unterminated string has no
  // NUL to stop at within the handle: what a framework's buffer may well hold.
  for (auto& h : handles) memset(h.internal + sizeof(RankInfo), 'x', sizeof(h) - sizeof(RankInfo));
  std::vector<RankInfo> out(2);
  clearLastError();
  const tpcommResult_t r = unpackHandles(handles.data(), 2, out.data());
  *error = lastError();
  return r;
}

TEST(RankHandleCheck, IntactHandlesUnpack) {
  std::string e;
  EXPECT_EQ(unpackWith([](RankInfo&) {}, &e), tpcommSuccess) << e;
}

TEST(RankHandleCheck, UnterminatedStringsAreRefusedByName) {
  struct Case {
    const char* field;
    std::function<void(RankInfo&)> corrupt;
  };
  const std::vector<Case> cases = {
      {"boot_id", [](RankInfo& i) { memset(i.boot_id, 'b', sizeof(i.boot_id)); }},
      {"host_id", [](RankInfo& i) { memset(i.host_id, 'm', sizeof(i.host_id)); }},
      {"pci_bus_id", [](RankInfo& i) { memset(i.pci_bus_id, 'p', sizeof(i.pci_bus_id)); }},
      {"pci_bus_id_norm",
       [](RankInfo& i) { memset(i.pci_bus_id_norm, 'n', sizeof(i.pci_bus_id_norm)); }},
      {"host_shm", [](RankInfo& i) { memset(i.host_shm, 'h', sizeof(i.host_shm)); }},
      {"view.gpus[].bus",
       [](RankInfo& i) { memset(i.view.gpus[1].bus, 'g', sizeof(i.view.gpus[1].bus)); }},
  };
  for (const Case& c : cases) {
    std::string e;
    EXPECT_EQ(unpackWith(c.corrupt, &e), tpcommInvalidArgument) << c.field << ": " << e;
    EXPECT_NE(e.find("rank handle 1: " + std::string(c.field) + " is not NUL-terminated"),
              std::string::npos)
        << e;
  }
}

TEST(RankHandleCheck, OutOfRangeFieldsAreRefusedByName) {
  struct Case {
    const char* field;
    std::function<void(RankInfo&)> corrupt;
  };
  const std::vector<Case> cases = {
      {"pid", [](RankInfo& i) { i.pid = 0; }},
      {"device", [](RankInfo& i) { i.device = -3; }},
      {"cc_major", [](RankInfo& i) { i.cc_major = 0; }},
      {"cc_minor", [](RankInfo& i) { i.cc_minor = 77; }},
      {"slot_bytes", [](RankInfo& i) { i.slot_bytes = 100; }},
      {"slot_bytes", [](RankInfo& i) { i.slot_bytes = (64u << 10) + 1; }},
      {"timeout_ms", [](RankInfo& i) { i.timeout_ms = -1; }},
      {"max_blocks", [](RankInfo& i) { i.max_blocks = 5000; }},
      {"transport", [](RankInfo& i) { i.transport = 9; }},
      {"algo", [](RankInfo& i) { i.algo = tpcommNumAlgos; }},
      {"algo", [](RankInfo& i) { i.algo = tpcommAlgoAuto; }},
      {"strict", [](RankInfo& i) { i.strict = 2; }},
      {"nccl_mode", [](RankInfo& i) { i.nccl_mode = 7; }},
      {"nccl_wanted", [](RankInfo& i) { i.nccl_wanted = 1; }},  // only rank 0 may
      {"view.count", [](RankInfo& i) { i.view.count = 1000; }},
      {"host_id", [](RankInfo& i) { i.host_id[0] = '\0'; }},
      {"view.gpus[1]", [](RankInfo& i) { i.view.gpus[1].path = 200; }},
      {"host_shm", [](RankInfo& i) { snprintf(i.host_shm, sizeof(i.host_shm), "/../etc/x"); }},
  };
  for (const Case& c : cases) {
    std::string e;
    EXPECT_EQ(unpackWith(c.corrupt, &e), tpcommInvalidArgument) << c.field << ": " << e;
    EXPECT_NE(e.find("rank handle 1: " + std::string(c.field)), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace tpcomm
