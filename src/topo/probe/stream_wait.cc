#include "topo/probe/stream_wait.h"

#include <sched.h>
#include <unistd.h>

namespace tpcomm {
namespace topo {
namespace {

template <typename Query>
Wait poll(Query query, const char* what, ProbeClock::time_point deadline, std::string* why) {
  const ProbeClock::time_point spin_until = ProbeClock::now() + std::chrono::milliseconds(2);
  for (;;) {
    const cudaError_t e = query();
    if (e == cudaSuccess) return Wait::kDone;
    if (e != cudaErrorNotReady) {
      *why = std::string(what) + " failed: " + cudaGetErrorString(e);
      cudaGetLastError();
      return Wait::kError;
    }
    const ProbeClock::time_point now = ProbeClock::now();
    if (now > deadline) return Wait::kTimeout;
    if (now < spin_until) {
      sched_yield();
    } else {
      usleep(100);
    }
  }
}

}  // namespace

Wait waitForStream(cudaStream_t s, ProbeClock::time_point deadline, std::string* why) {
  return poll([s] { return cudaStreamQuery(s); }, "cudaStreamQuery", deadline, why);
}

Wait waitForEvent(cudaEvent_t e, ProbeClock::time_point deadline, std::string* why) {
  return poll([e] { return cudaEventQuery(e); }, "cudaEventQuery", deadline, why);
}

}  // namespace topo
}  // namespace tpcomm
