// The plan of a reduce-scatter or an all-gather (tpcommReduceScatter / tpcommAllGather): the
// halves of the two-shot, so the all-reduce's policy decides where a call of the same bytes goes
// (peer memory by push or pull, host memory, or NCCL where it measured faster), and the half of
// the two-shot over that transport and protocol runs it. Pure C++ like the planner, so the CPU
// tests check every decision.
#pragma once

#include "plan/planner.h"

namespace tpcomm {

// The variant of `coll`'s half over the transport and protocol of all-reduce algorithm `algo`
// (NCCL: Nccl; the pull algorithms: the pull halves; the island: the push halves, its legs push);
// None for the all-reduce itself or an algorithm that is not one. The copy-engine one-shot has no
// half: the pull halves run it where `stores_collapse` (the probe's write_collapse verdict over
// PCIe, as the policy reads it), the push halves elsewhere.
tpcommVariant_t halfVariant(tpcommColl_t coll, int algo, bool stores_collapse);

// call.bytes: the whole message (world x the per-rank count's bytes), which is what one step of
// the two-shot's slots carries, as in an all-reduce of those bytes. call.aligned: both buffers
// and the per-rank runs are 16-byte aligned. The plan's algorithm is twoshot, twoshot_pull,
// host_twoshot or nccl (what the stats count).
CallPlan planHalfCall(const CommFacts& f, tpcommColl_t coll, const CallArgs& call);

}  // namespace tpcomm
