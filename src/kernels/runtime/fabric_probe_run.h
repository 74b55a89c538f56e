// The fabric probe on the GPUs (kernels in fabric_probe_kernels.cu): per pair and with every pair
// at once, SM store and load bandwidth (a kernel writing / reading the peer's buffer), copy-engine
// bandwidth (cudaMemcpyPeerAsync) and one-way latency (a flag ping-pong between two kernels), then
// the same between gpus[0] and pinned host memory. Every measurement has its own deadline inside
// the budget (stream polling; the ping-pong kernels also stop at a %globaltimer deadline); what
// does not finish leaves its numbers at -1 and out->error says why (a stuck measurement's buffers
// are leaked, as the P2P test does: freeing them would wait for it).
#pragma once

#include <string>
#include <vector>

#include "topo/probe/fabric_probe.h"

namespace tpcomm {
namespace topo {

// gpus: CUDA ordinals whose P2P works between every two (a repeated ordinal: two ranks' buffers
// on one GPU, e.g. {0, 0}; a single GPU probes host memory only). Peer access is enabled where
// needed and disabled again where this call enabled it; the current device is restored. Creates
// a CUDA context on every GPU named (see p2p_test.h for what that costs). out->gpus = gpus.
// False only when the probe could not start (no device, no memory): *why.
bool runFabricProbe(const std::vector<int>& gpus, int budget_ms, FabricProbe* out,
                    std::string* why);

}  // namespace topo
}  // namespace tpcomm
