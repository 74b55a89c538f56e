// One step of the copy-engine one-shot as the host enqueues it (comm/call/ce_steps.h), walked for
// the protocol's invariants (docs/PROTOCOL.md, "Copy engines"): the order that makes a flag's
// arrival imply the data's, and that only one-block kernels ever wait for a peer, whatever the
// call's grid (with ranks sharing a GPU a peer's copies are same-device copies that may need the
// SMs: a wide grid waiting on every SM kept them from starting, worlds 3..8).
#include <gtest/gtest.h>

#include <vector>

#include "comm/call/ce_steps.h"

namespace tpcomm {
namespace {

size_t role(const CeOp& op) {
  return op.operand & (kCeGuardOp | kCeWaitOp);
}

TEST(CeSteps, GuardCopiesThenFlagsThenWaitThenReduce) {
  for (int world = 2; world <= kMaxRanks; ++world)
    for (int rank = 0; rank < world; ++rank)
      for (int slot = 0; slot < kNumSlots; ++slot) {
        SCOPED_TRACE(testing::Message()
                     << "world " << world << " rank " << rank << " slot " << slot);
        const CeStep st = ceStep(world, rank, slot, 128, 128, true);
        ASSERT_EQ(st.n, 3 + 2 * (world - 1));
        EXPECT_EQ(st.ops[0].kind, CeOpKind::kGuard);
        std::vector<int> data(world, 0), flags(world, 0);
        for (int i = 1; i <= world - 1; ++i) {
          ASSERT_EQ(st.ops[i].kind, CeOpKind::kDataCopy);
          ++data[st.ops[i].peer];
        }
        for (int i = world; i <= 2 * (world - 1); ++i) {
          ASSERT_EQ(st.ops[i].kind, CeOpKind::kFlagCopy);
          ++flags[st.ops[i].peer];
        }
        for (int p = 0; p < world; ++p) {
          EXPECT_EQ(data[p], p == rank ? 0 : 1) << "data copies to rank " << p;
          EXPECT_EQ(flags[p], p == rank ? 0 : 1) << "flag copies to rank " << p;
        }
        EXPECT_EQ(st.ops[st.n - 2].kind, CeOpKind::kWait);
        EXPECT_EQ(st.ops[st.n - 1].kind, CeOpKind::kReduce);
        // The kernels decode the slot and their role from the operand.
        EXPECT_EQ(role(st.ops[0]), kCeGuardOp);
        EXPECT_EQ(role(st.ops[st.n - 2]), kCeWaitOp);
        EXPECT_EQ(role(st.ops[st.n - 1]), 0u);
        for (int i : {0, st.n - 2, st.n - 1})
          EXPECT_EQ(st.ops[i].operand & kCeSlotMask, static_cast<size_t>(slot));
      }
}

TEST(CeSteps, OnlyOneBlockKernelsWaitForPeersWhateverTheGrid) {
  for (int world = 2; world <= kMaxRanks; ++world)
    for (int blocks : {1, 24, 99, 128})
      for (int threads : {32, 128, 512})
        for (bool pdl : {false, true}) {
          const CeStep st = ceStep(world, world - 1, 0, blocks, threads, pdl);
          int waiting_blocks = 0;
          for (int i = 0; i < st.n; ++i) {
            const CeOp& op = st.ops[i];
            if (!ceOpWaitsForPeers(op)) continue;
            EXPECT_EQ(op.blocks, 1)
                << "world " << world << ": op " << i << " waits on " << op.blocks << " blocks";
            EXPECT_GE(op.threads, world) << "the guard's thread per peer";
            waiting_blocks += op.blocks;
          }
          // A step's waiting blocks: the guard and the wait, one each, never the call's grid.
          EXPECT_EQ(waiting_blocks, 2);
          const CeOp& reduce = st.ops[st.n - 1];
          EXPECT_FALSE(ceOpWaitsForPeers(reduce));
          EXPECT_EQ(reduce.blocks, blocks);
          EXPECT_EQ(reduce.threads, threads);
          // The reduce grid must not launch early (PDL) and sit on the SMs while the wait spins;
          // the wait follows copies. Only the guard may take programmatic dependent launch.
          EXPECT_FALSE(reduce.pdl);
          EXPECT_FALSE(st.ops[st.n - 2].pdl);
          EXPECT_EQ(st.ops[0].pdl, pdl);
        }
}

}  // namespace
}  // namespace tpcomm
