// Reduce-scatter and all-gather (tpcommReduceScatter / tpcommAllGather) run the halves of the
// two-shot: the all-reduce's policy decides where a call of the same bytes goes (peer memory by
// push or pull, host memory, or NCCL where it measured faster), and the half of the two-shot over
// that transport and protocol runs it (rsagRules, plan/rules.h).
#pragma once

#include "plan/planner.h"

namespace tpcomm {

// The variant of `coll`'s half over the transport and protocol of all-reduce algorithm `algo`
// (NCCL: Nccl; the pull algorithms: the pull halves; the island: the push halves, its legs push);
// None for the all-reduce itself or an algorithm that is not one. The copy-engine one-shot has no
// half: the pull halves run it where `stores_collapse` (the probe's write_collapse verdict over
// PCIe, as the policy reads it), the push halves elsewhere.
tpcommVariant_t rsagVariant(tpcommColl_t coll, int algo, bool stores_collapse);

}  // namespace tpcomm
