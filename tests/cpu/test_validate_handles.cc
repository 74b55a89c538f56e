// A destroyed communicator's handle stays refused: no later communicator is ever placed at its
// address, even though the allocator hands the freed block out again first. And Explain refuses a
// count whose byte size overflows, with the check tpcommAllReduce uses. No GPU needed: the
// communicator objects here are never initialised, only created, registered and destroyed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <new>
#include <set>
#include <string>

#include "comm/comm.h"
#include "comm/lifecycle/registry.h"
#include "common/error.h"

namespace tpcomm {
namespace {

bool says(const char* word) {
  return std::string(lastError()).find(word) != std::string::npos;
}

TEST(Handles, AStaleHandleNeverNamesANewerCommunicator) {
  std::set<tpcommComm*> stale;
  int reused_by_allocator = 0;
  for (int i = 0; i < 200; ++i) {
    tpcommComm* c = createComm();
    c->state = CommState::kReady;
    ASSERT_EQ(stale.count(c), 0u) << "communicator " << i << " landed on a destroyed one's address";
    int n = 0;
    ASSERT_EQ(tpcommCommCount(c, &n), tpcommSuccess) << lastError();
    ASSERT_EQ(tpcommCommDestroy(c), tpcommSuccess) << lastError();
    stale.insert(c);
    // What a plain `new` would have given the next communicator (glibc: this very block).
    void* next = ::operator new (sizeof(tpcommComm), std::align_val_t{alignof(tpcommComm)});
    reused_by_allocator += stale.count(static_cast<tpcommComm*>(next)) ? 1 : 0;
    ::operator delete (next, std::align_val_t{alignof(tpcommComm)});
  }
  printf("the allocator offered a destroyed communicator's address %d times in 200\n",
         reused_by_allocator);
  for (tpcommComm* c : stale) {
    int n = 0;
    ASSERT_EQ(tpcommCommCount(c, &n), tpcommInvalidUsage);
    ASSERT_TRUE(says("destroyed communicator")) << lastError();
    ASSERT_TRUE(says("not a live communicator")) << lastError();
  }
  tpcommComm* first = *stale.begin();
  alignas(16) static char buf[64];
  EXPECT_EQ(tpcommAllReduce(buf, buf, 4, tpcommFloat32, tpcommSum, first, nullptr),
            tpcommInvalidUsage);
  EXPECT_TRUE(says("destroyed communicator")) << lastError();
  EXPECT_EQ(tpcommCommDestroy(first), tpcommInvalidUsage);
  EXPECT_TRUE(says("destroyed communicator")) << lastError();
}

TEST(Handles, AnAddressTpcommNeverGaveOutIsNotCalledDestroyed) {
  alignas(16) static char fake[sizeof(tpcommComm)];
  int n = 0;
  EXPECT_EQ(tpcommCommCount(reinterpret_cast<tpcommComm_t>(fake), &n), tpcommInvalidUsage);
  EXPECT_TRUE(says("never created")) << lastError();
  EXPECT_FALSE(says("destroyed")) << lastError();
}

// A communicator object that is registered but was never initialised (planner facts of world 0):
// enough for the argument checks, which come first.
struct ReadyComm {
  tpcommComm* c = createComm();
  ReadyComm() { c->state = CommState::kReady; }
  ~ReadyComm() { tpcommCommDestroy(c); }
};

TEST(Explain, AnOverflowingCountIsRefusedAsTpcommAllReduceRefusesIt) {
  ReadyComm rc;
  tpcommCallInfo_t info;
  EXPECT_EQ(tpcommCommExplain(rc.c, SIZE_MAX / 2, tpcommFloat32, &info), tpcommInvalidArgument);
  EXPECT_TRUE(says("tpcommCommExplain: count")) << lastError();
  EXPECT_TRUE(says("overflows")) << lastError();
  EXPECT_EQ(tpcommCommExplain(rc.c, SIZE_MAX / 2 + 1, tpcommBfloat16, &info),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("overflows")) << lastError();
  EXPECT_EQ(tpcommCommExplain(rc.c, 8, static_cast<tpcommDataType_t>(3), &info),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("datatype 3")) << lastError();
  // The fused Explain shares the fused call's check: exact for the datatype, not a guess.
  EXPECT_EQ(tpcommCommExplainAddRmsNorm(rc.c, SIZE_MAX / 4096 / 2 + 1, 4096, tpcommBfloat16,
                                        nullptr, &info),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("tpcommCommExplainAddRmsNorm")) << lastError();
  EXPECT_TRUE(says("overflows")) << lastError();
  EXPECT_EQ(tpcommCommExplainAddRmsNorm(rc.c, 4, 65537, tpcommBfloat16, nullptr, &info),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("hidden is 65537")) << lastError();
}

}  // namespace
}  // namespace tpcomm
