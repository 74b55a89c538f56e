// One call's pipeline, the same for every collective of a communicator on one machine
// (tpcommAllReduce, tpcommReduceScatter / tpcommAllGather, tpcommAllReduceAddRmsNorm): the
// device, the stream, the buffers, the communicator's health, the plan, the order among the
// communicator's calls, the launch, the order's mark, the record, each once and in this order.
// A collective gives what differs (its name, its planner query, its buffers and outputs) and the
// launch of what the plan chose; everything around the launch is here. A communicator spanning
// machines runs its legs as the launch (comm/node/node_collectives.cc), each local leg a call of
// its own. A broken communicator
// refuses the call with its error after filling the outputs with the poison on the stream, in
// the calls' order (comm/call/poison_outputs.h).
#pragma once

#include <cuda_runtime_api.h>

#include <initializer_list>

#include "comm/call/call_common.h"
#include "comm/call/poison_outputs.h"
#include "comm/comm.h"
#include "plan/planner.h"

namespace tpcomm {

struct CallSteps {
  const char* op;                             // the entry point, for every message
  Call call;                                  // what the planner is asked (plannedCall)
  size_t bytes;                               // the payload, for the plan's error
  std::initializer_list<BufferArg> buffers;   // checked where check_buffers
  std::initializer_list<OutputSpan> outputs;  // poisoned where the communicator is broken
  bool check_buffers = true;    // false: a hierarchical call's own scratch (local_calls.h)
  bool nothing = false;         // moves nothing on any rank: the checks only, no launch or record
  bool spanning = false;        // planned as a call of the communicator spanning machines
  bool records_itself = false;  // its legs record themselves (comm/node/node_collectives.cc)
};

// The launch of what the plan chose, on the ordered stream; fills the record of what ran.
class CallLaunch {
 public:
  virtual tpcommResult_t launch(const CallPlan& p, cudaStream_t s, bool capturing,
                                CallRecord* rec) = 0;

 protected:
  ~CallLaunch() = default;
};

tpcommResult_t runCallWith(tpcommComm* comm, cudaStream_t s, const CallSteps& steps,
                           CallLaunch& launch);

// runCallWith with the launch a callable: f(plan, stream, capturing, CallRecord*).
template <typename F>
tpcommResult_t runCall(tpcommComm* comm, cudaStream_t s, const CallSteps& steps, F f) {
  struct By final : CallLaunch {
    F& f;
    explicit By(F& g) : f(g) {}
    tpcommResult_t launch(const CallPlan& p, cudaStream_t st, bool capturing,
                          CallRecord* rec) override {
      return f(p, st, capturing, rec);
    }
  } by(f);
  return runCallWith(comm, s, steps, by);
}

}  // namespace tpcomm
