// Call fingerprints (docs/PROTOCOL.md, "Calls that disagree"): the 16-byte record the kernels
// exchange (kernels/runtime/call_print.h, the same code on the device) and the host's message for
// what they report (comm/lifecycle/async_error.h).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "comm/lifecycle/async_error.h"
#include "kernels/runtime/call_print.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {
namespace {

TEST(CallPrint, RecordsRoundTripAndTellCallsApart) {
  const PrintWords a = packPrint(17, 1024, 0, kCallAllReduce);
  EXPECT_TRUE(printArrived(a, 17));
  EXPECT_FALSE(printArrived(a, 21))
      << "an older epoch's record of the same slot is not this call's";
  const CallPrint p = unpackPrint(a);
  EXPECT_EQ(p.count, 1024u);
  EXPECT_EQ(p.dtype, 0);
  EXPECT_EQ(p.kind, kCallAllReduce);
  const CallPrint big = unpackPrint(packPrint(3, (1ull << 40) + 5, 2, kCallFused));
  EXPECT_EQ(big.count, (1ull << 40) + 5);
  EXPECT_EQ(big.kind, kCallFused);
  EXPECT_TRUE(printsAgree(a, packPrint(17, 1024, 0, kCallAllReduce)));
  // Equal bytes, other datatype (bf16 2N against fp32 N); another count; a fused call.
  EXPECT_FALSE(printsAgree(packPrint(17, 2048, 2, kCallAllReduce), a));
  EXPECT_FALSE(printsAgree(packPrint(17, 2048, 0, kCallAllReduce), a));
  EXPECT_FALSE(printsAgree(packPrint(17, 1024, 0, kCallFused), a));
  EXPECT_FALSE(printsAgree(packPrint(17, 1024 + (1ull << 32), 0, kCallAllReduce), a));
}

TEST(CallPrint, TornOrNeverWrittenRecordsAreNotArrived) {
  const PrintWords old = packPrint(13, 4096, 2, kCallAllReduce);
  const PrintWords now = packPrint(17, 1024, 0, kCallAllReduce);
  // Each 8-byte half carries the tag: half of the new record over half of the old is "not yet".
  EXPECT_FALSE(printArrived(PrintWords{now.tag0, now.count_lo, old.tag1, old.meta}, 17));
  EXPECT_FALSE(printArrived(PrintWords{old.tag0, old.count_lo, now.tag1, now.meta}, 17));
  EXPECT_FALSE(printArrived(PrintWords{0, 0, 0, 0}, 0)) << "zeroed memory is no call at epoch 0";
  EXPECT_TRUE(printArrived(packPrint(0, 8, 1, kCallAllReduce), 0));
}

void clearWith(HostError* e, int code) {
  memset(static_cast<void*>(e), 0, sizeof(*e));
  e->code = code;
}

TEST(CallPrint, MismatchMessageNamesBothCalls) {
  HostError e;
  clearWith(&e, tpcommInvalidUsage);
  e.peer = 1;  // a timeout reported alongside must not leak into the mismatch
  e.mismatch_peer = 1;
  e.mismatch_step = 17;
  const CallPrint mine = unpackPrint(packPrint(17, 1024, 0, kCallAllReduce));
  const CallPrint theirs = unpackPrint(packPrint(17, 2048, 2, kCallAllReduce));
  e.mine.count = mine.count;
  e.mine.dtype = mine.dtype;
  e.mine.kind = mine.kind;
  e.theirs.count = theirs.count;
  e.theirs.dtype = theirs.dtype;
  e.theirs.kind = theirs.kind;
  const std::string msg = asyncErrorMessage("tpcommAllReduce", 0, 5000, readAsyncError(e));
  EXPECT_NE(msg.find("rank 1 called all-reduce of 2048 x bf16, rank 0 (this rank) all-reduce of "
                     "1024 x fp32 (the call at step epoch 17)"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.rfind("tpcommAllReduce: ", 0), 0u) << msg;
  EXPECT_EQ(describeCall(CallPrint{4096, 1, kCallFusedFp8}),
            "all-reduce + add + RMSNorm + FP8 of 4096 x fp16");
}

TEST(CallPrint, TimeoutMessagesSayWhetherThePeerEverStarted) {
  HostError e;
  clearWith(&e, tpcommTimeout);
  e.peer = 1;
  e.step = 9;
  const std::string plain = asyncErrorMessage("tpcommAllReduce", 0, 300, readAsyncError(e));
  EXPECT_NE(plain.find("waited 300 ms for rank 1 (step 9) and gave up"), std::string::npos)
      << plain;
  EXPECT_EQ(plain.find("never started"), std::string::npos) << plain;
  e.never_started = 2;  // rank 1's fingerprint never came
  const std::string never = asyncErrorMessage("tpcommAllReduce", 0, 300, readAsyncError(e));
  EXPECT_NE(never.find("rank 1 (step 9), which never started that call"), std::string::npos)
      << never;
  EXPECT_NE(never.find("different count or datatype"), std::string::npos) << never;
}

}  // namespace
}  // namespace tpcomm
