// A bounded wait for work on a stream or an event: the probes' way of finding out that the
// fabric hangs instead of hanging with it (the P2P test, the fabric probe).
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <string>

namespace tpcomm {
namespace topo {

using ProbeClock = std::chrono::steady_clock;

enum class Wait { kDone, kTimeout, kError };

// Polls cudaStreamQuery / cudaEventQuery until done, an error (*why names it) or the deadline.
// Spins (yielding) for the first 2 ms, where healthy work finishes: a sleep there would add its
// own granularity (tens of us in VMs) to every wait and to the time reported. Sleeps after.
Wait waitForStream(cudaStream_t s, ProbeClock::time_point deadline, std::string* why);
Wait waitForEvent(cudaEvent_t e, ProbeClock::time_point deadline, std::string* why);

}  // namespace topo
}  // namespace tpcomm
