// One communicator's plans: the last plan of each kind of call (each collective, the fused call,
// and each of these on a communicator spanning machines), reused while that kind's calls repeat.
// planCall is a pure function of the facts (fixed at init) and the call, so a repeated call costs
// a comparison and the hot path builds no strings.
#pragma once

#include "plan/planner.h"

namespace tpcomm {

class PlanCache {
 public:
  // The plan of `call`; facts() gives the communicator's facts (with CommFacts::nodes where
  // `spanning`), asked only when the plan is made.
  template <typename FactsFn>
  const CallPlan& get(const Call& call, bool spanning, FactsFn facts) {
    const int k = slot(call, spanning);
    if (!valid_[k] || !(call_[k] == call)) {
      plan_[k] = planCall(facts(), call);
      call_[k] = call;
      valid_[k] = true;
    }
    return plan_[k];
  }

 private:
  static constexpr int kKinds = tpcommNumColls + 1;  // the collectives, then the fused call
  static int slot(const Call& c, bool spanning) {
    return (c.rows > 0 ? tpcommNumColls : static_cast<int>(c.collective)) + (spanning ? kKinds : 0);
  }
  Call call_[2 * kKinds];
  CallPlan plan_[2 * kKinds];
  bool valid_[2 * kKinds] = {};
};

}  // namespace tpcomm
