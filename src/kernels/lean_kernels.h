// The lean one-shot's kernel sets (oneshot_lean.cu, oneshot_pull_lean.cu), which oneshot.cu hands
// out as the `lean` half of the one-shot's and the host sentinel's sets (algo_launch.h). Only `fn`
// is filled.
#pragma once

#include "kernels/runtime/algo_launch.h"

namespace tpcomm {

KernelSet leanOneShotKernels(int world);       // over peer memory (SentinelProto)
KernelSet leanHostSentinelKernels(int world);  // over host memory (HostSentinelProto)
KernelSet leanPullOneShotKernels(int world);   // the pull one-shot's (oneshot_pull_lean.cu)

}  // namespace tpcomm
