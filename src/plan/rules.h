// The planner's rules, one function per kind of call; planCall (plan/planner.cc) picks the one
// for the call and nothing else calls them. Each is pure C++ like planCall.
#pragma once

#include "plan/planner.h"

namespace tpcomm {

// The threads `variant`'s kernel launches with for a grid of `grid_threads` (CallPlan::threads).
int launchedThreads(tpcommVariant_t variant, int grid_threads);

// The launch of a two-shot pull's kernel (the quantized wire's every form, the host two-shot's
// pulled form; plan/planner.cc): variant v with `chunk_vecs` vectors a step, on the pull
// two-shot's grid, into p (its decision kept).
void pullTwoShotLaunch(const CommFacts& f, const Call& call, tpcommVariant_t v, size_t chunk_vecs,
                       CallPlan* p);

// All-reduce (plan/planner.cc): the policy's algorithm, then its kernel (lean, LL or general),
// grid and one-shot geometry.
CallPlan allReduceRules(const CommFacts& f, const Call& call);

// The quantized wire (plan/wire_plan.cc): an opted-in all-reduce's plan p, moved onto the
// codec's two-shot pull where the codec takes it (else p, its reason saying why not).
CallPlan wireRules(const CommFacts& f, const Call& call, CallPlan p);

// Reduce-scatter and all-gather (plan/rsag_plan.cc): the all-reduce's policy for the same bytes
// picks the transport; the half of the two-shot over it runs the call.
CallPlan rsagRules(const CommFacts& f, const Call& call);

// All-reduce + residual + RMSNorm (plan/fused_plan.cc): the all-reduce's plan, and in
// CallPlan::epilogue the fused one-shot that takes the whole call or the epilogue kernel after it.
CallPlan fusedRules(const CommFacts& f, const Call& call);

// TPCOMM_KNOBS=variant=<name> (plan/forced_variant.cc): whether the row serves this kind of
// call, and the plan that runs it (tpcommUnsupported, naming it, where none can).
bool variantServes(int variant, const Call& call);
CallPlan forcedVariantRules(const CommFacts& f, const Call& call);

// Whether an all-reduce plan takes the pull LL entries (p2p_oneshot_pull_ll: the flag in the
// data), which the fused call over pull may take too (plan/planner.cc).
bool takesPullLL(const CallPlan& p);

// The epilogue kernel after an all-reduce (plan/fused_plan.cc): its variant, grid and `why`.
void epilogueAfter(const CommFacts& f, const Call& call, const std::string& why, EpiloguePlan* e);
// The same after the all-reduce `ar`, the reason "unfused: <ar>, then the add+RMSNorm kernel",
// with " (<why>)" where `why` is not empty.
void unfusedAfter(const CommFacts& f, const Call& call, tpcommVariant_t ar, const std::string& why,
                  EpiloguePlan* e);

// A communicator spanning machines (plan/node_plan.cc): the legs' shape and text in
// CallPlan::node, the first intra-node leg's plan in the rest. A fused call there runs the
// hierarchical all-reduce (its plan) and then the epilogue kernel (CallPlan::epilogue): the fused
// kernels would sum one machine only.
CallPlan nodeRules(const CommFacts& f, const Call& call);

}  // namespace tpcomm
