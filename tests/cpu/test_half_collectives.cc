// tpcommReduceScatter and tpcommAllGather without a GPU: their argument checks (in place only as
// NCCL allows it), the planner's choice of the two-shot half per transport and size, Explain for
// every collective, and the segmented step geometry the kernels walk (chunk_layout.h).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "comm/call/call_common.h"
#include "comm/checks/validate_rsag.h"
#include "comm/comm.h"
#include "comm/lifecycle/async_error.h"
#include "comm/lifecycle/registry.h"
#include "common/error.h"
#include "kernels/layout/chunk_layout.h"
#include "kernels/runtime/algo_launch.h"
#include "kernels/runtime/call_print.h"
#include "kernels/runtime/variant_table.h"
#include "plan/rsag_plan.h"
#include "tests/cpu/support/plan_facts.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;
constexpr tpcommColl_t kRS = tpcommCollReduceScatter, kAG = tpcommCollAllGather;

bool says(const char* word) {
  return std::string(lastError()).find(word) != std::string::npos;
}

TEST(HalfValidate, EveryBadArgumentHasItsCodeAndMessage) {
  alignas(16) static char buf[8192];
  size_t bytes = 0;
  EXPECT_EQ(validateRsagArgs(kRS, nullptr, buf, 8, tpcommFloat32, 0, 2, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("tpcommReduceScatter: sendbuff is NULL")) << lastError();
  EXPECT_EQ(validateRsagArgs(kAG, buf, nullptr, 8, tpcommFloat32, 0, 2, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("tpcommAllGather: recvbuff is NULL")) << lastError();
  EXPECT_EQ(validateRsagArgs(kRS, buf, buf + 4096, 8, 3, 0, 2, &bytes), tpcommInvalidArgument);
  EXPECT_TRUE(says("datatype 3")) << lastError();
  EXPECT_EQ(validateRsagArgs(kAG, buf + 1, buf + 4096, 8, tpcommBfloat16, 0, 2, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("not aligned")) << lastError();
  // The per-rank count fits, the whole message does not.
  EXPECT_EQ(validateRsagArgs(kRS, buf, buf, SIZE_MAX / 8, tpcommFloat32, 0, 8, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("recvcount")) << lastError();
  EXPECT_TRUE(says("overflows")) << lastError();
  EXPECT_EQ(validateRsagArgs(kAG, buf, buf, SIZE_MAX / 2, tpcommFloat32, 0, 2, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("overflows")) << lastError();
}

TEST(HalfValidate, CountZeroIsValidEvenWithNullBuffers) {
  size_t bytes = 1;
  EXPECT_EQ(validateRsagArgs(kRS, nullptr, nullptr, 0, tpcommFloat16, 1, 4, &bytes), tpcommSuccess)
      << lastError();
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(validateRsagArgs(kAG, nullptr, nullptr, 0, tpcommBfloat16, 0, 2, &bytes),
            tpcommSuccess);
}

// In place means the per-rank buffer is this rank's run of the whole one (as NCCL has it); any
// other overlap would let one rank's writes change what it still has to send.
TEST(HalfValidate, InPlaceOnlyAtTheRanksRun) {
  alignas(16) static float whole[4 * 6];
  size_t bytes = 0;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(validateRsagArgs(kRS, whole, whole + rank * 6, 6, tpcommFloat32, rank, 4, &bytes),
              tpcommSuccess)
        << lastError();
    EXPECT_EQ(bytes, 4u * 6 * 4);
    EXPECT_EQ(validateRsagArgs(kAG, whole + rank * 6, whole, 6, tpcommFloat32, rank, 4, &bytes),
              tpcommSuccess)
        << lastError();
    const int other = (rank + 1) % 4;
    EXPECT_EQ(validateRsagArgs(kRS, whole, whole + other * 6, 6, tpcommFloat32, rank, 4, &bytes),
              tpcommInvalidArgument);
    EXPECT_TRUE(says("overlap without being in place")) << lastError();
    EXPECT_TRUE(says("recvbuff == sendbuff + rank * recvcount")) << lastError();
    EXPECT_EQ(validateRsagArgs(kAG, whole + other * 6, whole, 6, tpcommFloat32, rank, 4, &bytes),
              tpcommInvalidArgument);
    EXPECT_TRUE(says("sendbuff == recvbuff + rank * sendcount")) << lastError();
  }
  // Half a run off is an overlap too; a buffer just past the whole one is not.
  EXPECT_EQ(validateRsagArgs(kRS, whole, whole + 3, 6, tpcommFloat32, 0, 4, &bytes),
            tpcommInvalidArgument);
  alignas(16) static float apart[4 * 6 + 6];
  EXPECT_EQ(validateRsagArgs(kRS, apart, apart + 24, 6, tpcommFloat32, 1, 4, &bytes), tpcommSuccess)
      << lastError();
}

struct HalfRow {
  int world;
  Fabric fabric;
  size_t bytes;  // the whole message
  tpcommVariant_t rs, ag;
  int algo;  // what the stats count
};

// The all-reduce's policy picks the transport for a message of the same bytes; the half of the
// two-shot over it runs the call, or NCCL where the policy measured NCCL faster.
TEST(HalfPlan, NamesTheHalfOfEachTransport) {
  const HalfRow rows[] = {
      {2, Fabric::kNvlink, 4 * KiB, tpcommVariantP2pReduceScatter, tpcommVariantP2pAllGather,
       tpcommAlgoTwoShot},
      {8, Fabric::kNvlink, 64 * MiB, tpcommVariantP2pReduceScatter, tpcommVariantP2pAllGather,
       tpcommAlgoTwoShot},
      {4, Fabric::kPcie, 1 * MiB, tpcommVariantP2pReduceScatter, tpcommVariantP2pAllGather,
       tpcommAlgoTwoShot},
      {2, Fabric::kHost, 16 * KiB, tpcommVariantHostReduceScatter, tpcommVariantHostAllGather,
       tpcommAlgoHostTwoShot},
      {8, Fabric::kHost, 1 * MiB, tpcommVariantHostReduceScatter, tpcommVariantHostAllGather,
       tpcommAlgoHostTwoShot},
      {8, Fabric::kHost, 4 * MiB, tpcommVariantNccl, tpcommVariantNccl, tpcommAlgoNccl},
  };
  for (const HalfRow& r : rows) {
    const CommFacts f = factsFor(r.world, r.fabric);
    const CallPlan rs = planCall(f, Call{r.bytes, true, kRS});
    const CallPlan ag = planCall(f, Call{r.bytes, true, kAG});
    const std::string at = "world " + std::to_string(r.world) + ", " + fabricName(r.fabric) + ", " +
                           std::to_string(r.bytes) + " bytes: ";
    EXPECT_EQ(rs.variant, r.rs) << at << tpcommVariantName(rs.variant) << " " << rs.decision.reason;
    EXPECT_EQ(ag.variant, r.ag) << at << tpcommVariantName(ag.variant) << " " << ag.decision.reason;
    EXPECT_EQ(rs.decision.algo, r.algo) << at << rs.decision.reason;
    EXPECT_EQ(rs.decision.fallback, r.rs == tpcommVariantNccl) << at;
    EXPECT_EQ(rs.decision.reason.rfind("reduce-scatter", 0), 0u) << rs.decision.reason;
    EXPECT_EQ(ag.decision.reason.rfind("all-gather", 0), 0u) << ag.decision.reason;
    if (r.rs == tpcommVariantNccl) continue;
    // The kernels step through the two-shot's slots: its chunk, a grid of at least a block.
    const size_t chunk =
        r.fabric == Fabric::kHost ? f.slots.host_chunk_vecs : f.slots.twoshot_chunk_vecs;
    EXPECT_EQ(rs.chunk_vecs, chunk) << at;
    EXPECT_GE(rs.grid.blocks, 1) << at;
    EXPECT_GE(rs.grid.threads, 32) << at;
    EXPECT_NE(variantKernel(rs.variant, r.world, 0), nullptr) << at;
    EXPECT_NE(variantKernel(ag.variant, r.world, 2), nullptr) << at;
  }
}

TEST(HalfPlan, ForcedStrictAndUnavailableAreTheAllReducesAnswers) {
  // Forced: the half of the forced algorithm's transport, or its refusal.
  CommFacts f = factsFor(2, Fabric::kHost, tpcommAlgoHostTwoShot);
  EXPECT_EQ(planCall(f, Call{MiB, true, kRS}).variant, tpcommVariantHostReduceScatter);
  f = factsFor(2, Fabric::kHost, tpcommAlgoOneShot);
  CallPlan p = planCall(f, Call{MiB, true, kAG});
  EXPECT_EQ(p.decision.error, tpcommUnsupported);
  EXPECT_EQ(p.variant, tpcommVariantNone);
  EXPECT_NE(p.decision.reason.find("peer-to-peer"), std::string::npos) << p.decision.reason;
  f = factsFor(2, Fabric::kNvlink, tpcommAlgoNccl);
  EXPECT_EQ(planCall(f, Call{KiB, true, kRS}).variant, tpcommVariantNccl);
  // Strict: where NCCL would serve, the call is refused, as the all-reduce's is.
  f = factsFor(8, Fabric::kHost);
  f.strict = true;
  p = planCall(f, Call{8 * MiB, true, kRS});
  EXPECT_EQ(p.decision.error, tpcommFallbackRefused);
  EXPECT_NE(p.decision.reason.find("TPCOMM_STRICT"), std::string::npos) << p.decision.reason;
  // No NCCL (ranks sharing a GPU): the host half serves every size.
  f = factsFor(8, Fabric::kHost);
  f.nccl_available = false;
  EXPECT_EQ(planCall(f, Call{64 * MiB, true, kAG}).variant, tpcommVariantHostAllGather);
}

// Ranks sharing a GPU: the half's grid fits the communicator's one cap, and says so.
TEST(HalfPlan, TheCoResidencyCapCutsTheGrid) {
  GridCaps caps;
  caps.ranks_per_gpu = 4;
  caps.blocks = 5;
  CommFacts f = factsFor(4, Fabric::kNvlink);
  f.grid_caps = &caps;
  for (tpcommColl_t coll : {kRS, kAG}) {
    const CallPlan p = planCall(f, Call{64 * MiB, true, coll});
    EXPECT_EQ(p.grid.blocks, 5) << p.decision.reason;
    EXPECT_EQ(p.decision.reason.rfind("capped at 5 blocks: 4 ranks share a GPU; ", 0), 0u)
        << p.decision.reason;
  }
}

TEST(HalfPlan, EveryHalfVariantIsInTheVariantTableAndNamed) {
  const tpcommVariant_t halves[] = {
      tpcommVariantP2pReduceScatter,     tpcommVariantP2pAllGather,
      tpcommVariantHostReduceScatter,    tpcommVariantHostAllGather,
      tpcommVariantP2pReduceScatterPull, tpcommVariantP2pAllGatherPull};
  const char* names[] = {"p2p_reduce_scatter", "p2p_all_gather",          "host_reduce_scatter",
                         "host_all_gather",    "p2p_reduce_scatter_pull", "p2p_all_gather_pull"};
  for (int i = 0; i < 6; ++i) {
    ASSERT_NE(variantRow(halves[i]), nullptr) << names[i];
    EXPECT_STREQ(tpcommVariantName(halves[i]), names[i]);
    EXPECT_TRUE(isKernelVariant(halves[i]));
    for (int world : kWorldClasses)
      for (int d = 0; d < kNumDtypes; ++d)
        EXPECT_NE(variantKernel(halves[i], world, d), nullptr) << names[i] << " world " << world;
  }
  EXPECT_EQ(rsagVariant(tpcommCollAllReduce, tpcommAlgoTwoShot, false), tpcommVariantNone);
  EXPECT_EQ(rsagVariant(kRS, tpcommAlgoTwoShotPull, false), tpcommVariantP2pReduceScatterPull);
  EXPECT_EQ(rsagVariant(kAG, tpcommAlgoOneShotCe, true), tpcommVariantP2pAllGatherPull);
  EXPECT_EQ(rsagVariant(kAG, tpcommAlgoOneShotCe, false), tpcommVariantP2pAllGather);
}

// A registered communicator object: the planner needs no GPU.
struct PlannedComm {
  tpcommComm c;
  explicit PlannedComm(int world) {
    c.state = CommState::kReady;
    c.world = world;
    c.fabric = Fabric::kNvlink;
    c.settings.algo = -1;
    DeviceComm d{};
    d.world = world;
    d.slot_bytes = 16 * MiB;
    c.slots = slotCapacity(d);
    registerComm(&c);
  }
  ~PlannedComm() { unregisterComm(&c); }
};

TEST(HalfExplain, AnswersThroughThePlannerForEveryCollective) {
  PlannedComm pc(4);
  tpcommCallInfo_t info{};
  ASSERT_EQ(
      tpcommCommExplainCollective(&pc.c, tpcommCollReduceScatter, 1000, tpcommBfloat16, &info),
      tpcommSuccess)
      << tpcommGetLastError();
  EXPECT_EQ(info.variant, tpcommVariantP2pReduceScatter);
  EXPECT_EQ(info.algo, tpcommAlgoTwoShot);
  EXPECT_EQ(info.bytes, 4u * 1000 * 2);  // the whole message
  EXPECT_GE(info.blocks, 1);
  const CallPlan want = planCall(factsOf(&pc.c), Call{8000, true, kRS});
  EXPECT_EQ(info.blocks, want.grid.blocks);
  EXPECT_STREQ(info.reason, want.decision.reason.c_str());
  ASSERT_EQ(tpcommCommExplainCollective(&pc.c, tpcommCollAllGather, 7, tpcommFloat32, &info),
            tpcommSuccess);
  EXPECT_EQ(info.variant, tpcommVariantP2pAllGather);
  EXPECT_EQ(info.bytes, 4u * 7 * 4);
  // The all-reduce's answer is tpcommCommExplain's.
  tpcommCallInfo_t ar{};
  ASSERT_EQ(tpcommCommExplainCollective(&pc.c, tpcommCollAllReduce, 4096, tpcommFloat16, &info),
            tpcommSuccess);
  ASSERT_EQ(tpcommCommExplain(&pc.c, 4096, tpcommFloat16, &ar), tpcommSuccess);
  EXPECT_EQ(info.variant, ar.variant);
  EXPECT_STREQ(info.reason, ar.reason);
  // Count 0 plans nothing.
  ASSERT_EQ(tpcommCommExplainCollective(&pc.c, tpcommCollAllGather, 0, tpcommFloat32, &info),
            tpcommSuccess);
  EXPECT_EQ(info.variant, tpcommVariantNone);
  EXPECT_EQ(info.bytes, 0u);
  // Refusals name the call and the value.
  EXPECT_EQ(
      tpcommCommExplainCollective(&pc.c, static_cast<tpcommColl_t>(7), 8, tpcommFloat32, &info),
      tpcommInvalidArgument);
  EXPECT_TRUE(says("collective 7")) << lastError();
  EXPECT_EQ(tpcommCommExplainCollective(&pc.c, kRS, SIZE_MAX / 8, tpcommFloat32, &info),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("tpcommCommExplainCollective")) << lastError();
  EXPECT_TRUE(says("overflows")) << lastError();
  EXPECT_EQ(tpcommCommExplainCollective(&pc.c, kRS, 8, tpcommFloat32, nullptr),
            tpcommInvalidArgument);
}

// A mismatch between a reduce-scatter on one rank and another call on its peer names both.
TEST(HalfPrint, KindsAreDistinctAndNamed) {
  EXPECT_EQ(describeCall(CallPrint{96, 2, kCallReduceScatter}), "reduce-scatter of 96 x bf16");
  EXPECT_EQ(describeCall(CallPrint{96, 0, kCallAllGather}), "all-gather of 96 x fp32");
  const PrintWords rs = packPrint(5, 96, 2, kCallReduceScatter);
  EXPECT_FALSE(printsAgree(rs, packPrint(5, 96, 2, kCallAllReduce)));
  EXPECT_FALSE(printsAgree(rs, packPrint(5, 96, 2, kCallAllGather)));
  EXPECT_TRUE(printsAgree(rs, packPrint(5, 96, 2, kCallReduceScatter)));
}

// The segmented geometry, walked as rsag.cu walks it: every vector of every rank's run is
// handled once per call, by the same offset in every segment; no offset leaves an area.
TEST(SegmentLayout, EveryVectorOfEveryRunOnceAndInsideItsArea) {
  struct Case {
    size_t slot_entries;
    int world;
    size_t seg_vecs, chunk_vecs;
    unsigned grid, block;
  };
  const Case cases[] = {{4096, 2, 1, 1024, 1, 32},   {4096, 2, 1000, 1024, 3, 64},
                        {4096, 3, 4097, 681, 4, 32}, {1 << 16, 8, 1 << 15, 1 << 14, 8, 128},
                        {4096, 8, 5, 256, 16, 32},   {4096, 5, 3000, 1020, 2, 512}};
  for (const Case& cs : cases) {
    const ChunkedCall k =
        segmentedCall(cs.slot_entries, cs.world, cs.seg_vecs, cs.chunk_vecs, cs.grid);
    const std::string at = "world " + std::to_string(cs.world) + ", run " +
                           std::to_string(cs.seg_vecs) + ", chunk " + std::to_string(cs.chunk_vecs);
    std::vector<int> seen(cs.seg_vecs, 0);
    for (size_t step = 0; step < k.nsteps; ++step)
      for (unsigned b = 0; b < cs.grid; ++b)
        for (unsigned t = 0; t < cs.block; ++t) {
          const SegmentStep st = segmentStep(k, 9, step, 1, b, t);
          EXPECT_EQ(st.epoch, 9 + step);
          for (size_t o = st.o0; o < st.o1; o += cs.block) {
            ASSERT_LT(o, k.seg_cap) << at;  // inside the area of a source (or an owner)
            ASSERT_LT(st.first + o, cs.seg_vecs) << at;
            seen[st.first + o]++;
          }
        }
    for (size_t v = 0; v < cs.seg_vecs; ++v) ASSERT_EQ(seen[v], 1) << at << ", vector " << v;
    EXPECT_LE(2 * static_cast<size_t>(cs.world) * k.seg_cap, cs.slot_entries) << at;
  }
}

// The largest whole message that fits a size_t is taken: 6 ranks' runs of
// floor(SIZE_MAX / 6) bytes each (in place at rank 0, so no address is formed beyond it).
TEST(HalfValidate, TheLargestWholeMessageThatFitsIsTaken) {
  alignas(16) static char buf[16];
  const size_t part = SIZE_MAX / 6;  // even: whole bf16 elements
  size_t bytes = 0;
  EXPECT_EQ(validateRsagArgs(kRS, buf, buf, part / 2, tpcommBfloat16, 0, 6, &bytes), tpcommSuccess)
      << lastError();
  EXPECT_EQ(bytes, part * 6);
  EXPECT_EQ(validateRsagArgs(kRS, buf, buf, part / 2 + 1, tpcommBfloat16, 0, 6, &bytes),
            tpcommInvalidArgument);
  EXPECT_TRUE(says("overflows")) << lastError();
}

}  // namespace
}  // namespace tpcomm
