// The plan of a reduce-scatter or an all-gather (tpcommReduceScatter / tpcommAllGather): the
// halves of the two-shot, so the all-reduce's policy decides where a call of the same bytes goes
// (peer memory, host memory, or NCCL where it measured faster), and the half of the two-shot over
// that transport runs it. Pure C++ like the planner, so the CPU tests check every decision.
#pragma once

#include "plan/planner.h"

namespace tpcomm {

// The variant of `coll`'s half over the transport of all-reduce algorithm `algo` (NCCL: Nccl);
// None for the all-reduce itself or an algorithm that is not one.
tpcommVariant_t halfVariant(tpcommColl_t coll, int algo);

// call.bytes: the whole message (world x the per-rank count's bytes), which is what one step of
// the two-shot's slots carries, as in an all-reduce of those bytes. call.aligned: both buffers
// and the per-rank runs are 16-byte aligned. The plan's algorithm is twoshot, host_twoshot or
// nccl (what the stats count).
CallPlan planHalfCall(const CommFacts& f, tpcommColl_t coll, const CallArgs& call);

}  // namespace tpcomm
