#include "comm/call/ce_steps.h"

namespace tpcomm {
namespace {

// The guard and the wait need a thread per rank at most: one warp.
constexpr int kWaitThreads = 32;
static_assert(kMaxRanks <= kWaitThreads, "the guard waits for each peer in a thread of its own");

CeOp kernelOp(CeOpKind kind, int blocks, int threads, bool pdl, size_t operand) {
  CeOp op;
  op.kind = kind;
  op.blocks = blocks;
  op.threads = threads;
  op.pdl = pdl;
  op.operand = operand;
  return op;
}

CeOp copyOp(CeOpKind kind, int peer) {
  CeOp op;
  op.kind = kind;
  op.peer = peer;
  return op;
}

}  // namespace

bool ceOpWaitsForPeers(const CeOp& op) {
  return op.kind == CeOpKind::kGuard || op.kind == CeOpKind::kWait;
}

CeStep ceStep(int world, int rank, int slot, int blocks, int threads, bool pdl) {
  CeStep st;
  const size_t s = static_cast<size_t>(slot) & kCeSlotMask;
  st.ops[st.n++] = kernelOp(CeOpKind::kGuard, 1, kWaitThreads, pdl, s | kCeGuardOp);
  // Every data copy before any flag copy: a flag is copied only once all the data has been.
  for (int p = 1; p < world; ++p) st.ops[st.n++] = copyOp(CeOpKind::kDataCopy, (rank + p) % world);
  for (int p = 1; p < world; ++p) st.ops[st.n++] = copyOp(CeOpKind::kFlagCopy, (rank + p) % world);
  // Only one-block kernels wait for peers, and the call's grid starts once the waits are over:
  // with ranks sharing a GPU a peer's copy is a same-device copy, which may run on the SMs, and it
  // must find room while this rank waits for it (docs/PROTOCOL.md, "Copy engines"). Neither kernel
  // under programmatic dependent launch: the wait follows copies, and an early reduce grid would
  // sit on the SMs while the wait spins.
  st.ops[st.n++] = kernelOp(CeOpKind::kWait, 1, kWaitThreads, false, s | kCeWaitOp);
  st.ops[st.n++] = kernelOp(CeOpKind::kReduce, blocks, threads, false, s);
  return st;
}

}  // namespace tpcomm
