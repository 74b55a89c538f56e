// TPCOMM_KNOBS=variant=<name> (plan/knobs.h): the calls of the variant's collective run that row
// of the variant table. No table maps a row to the algorithm and options that give it: the rules
// themselves are asked, with the communicator's knobs first, then with each algorithm forced and
// each option of a single-step call (lean, host sentinel, pull LL) allowed or not, and the first
// plan of that row is the answer. What no rule gives is refused, with the planner's own choice
// named, so a forced test or measurement never runs something else without a word.
#include <climits>
#include <string>

#include "common/str_format.h"
#include "kernels/layout/pull_ll_layout.h"
#include "plan/rules.h"

namespace tpcomm {
namespace {

// The variant a plan runs for this call: a fused call's is its epilogue's (the fused kernel, or
// the epilogue kernel after the all-reduce).
int plannedVariant(const CallPlan& p, const Call& call) {
  return call.rows > 0 ? p.epilogue.variant : p.variant;
}

// The options of a call, each combination once (0: the communicator's knobs): bit 0 flips lean,
// bit 1 the host sentinel, bit 2 the fused pull's LL entries, bit 3 the fused two-shot's form
// where the all-reduce pushes over NVLink; option / 16 % 3 sets the row count from which a fused
// call takes the two-shot as is, from one row, or never; option / 48 the LL entries (the pull
// one-shot's, the host two-shot's) as is, off, or wherever they fit.
constexpr int kOptions = 16 * 3 * 3;
LaunchKnobs withOption(LaunchKnobs k, int option) {
  if (option & 1) k.lean = !k.lean;
  if (option & 2) k.host_sentinel = !k.host_sentinel;
  if (option & 4) k.fused_pull_ll = !k.fused_pull_ll;
  if (option & 8) k.fused_twoshot_push = !k.fused_twoshot_push;
  // Both ends, not a flip: the default (unset) sits between them, and a flip of it reached one.
  if (option / 16 % 3 == 1) k.fused_twoshot_rows = 1;
  if (option / 16 % 3 == 2) k.fused_twoshot_rows = 0;
  if (option / 48 == 1) {
    k.pull_ll_bytes = 0;
    k.host_ll_bytes = 0;
  }
  if (option / 48 == 2) {
    k.pull_ll_bytes = static_cast<int>(kPullLLMaxCallBytes);
    k.host_ll_bytes = INT_MAX;
  }
  return k;
}

// A forced algorithm plans whatever it is told: the transport it needs exists only where init set
// it up (the host segment, the copy engines' landing slots). The one `variant` needs and this
// communicator lacks, by name; nullptr when it has it.
const char* missingTransport(const CommFacts& f, int variant) {
  const VariantTransport t = variantRow(variant)->transport;
  if (t == VariantTransport::kHost && !f.host_transport) return "pinned host memory";
  if (t == VariantTransport::kCopyEngine && !f.ce_staging) return "the copy engines' landing slots";
  return nullptr;
}

bool runs(const CallPlan& p, const Call& call, int want) {
  return p.decision.error == tpcommSuccess && plannedVariant(p, call) == want;
}

}  // namespace

bool variantServes(int variant, const Call& call) {
  const VariantRow* r = variantRow(variant);
  if (!r) return false;
  const bool fused = call.rows > 0;
  switch (r->collective) {
    case VariantCollective::kNone:  // nccl: every collective but the fused call
      return r->transport == VariantTransport::kNccl && !fused;
    case VariantCollective::kAllReduce:
      return !fused && call.collective == tpcommCollAllReduce;
    case VariantCollective::kFused:
    case VariantCollective::kEpilogue:
      return fused;
    case VariantCollective::kReduceScatter:
      return !fused && call.collective == tpcommCollReduceScatter;
    case VariantCollective::kAllGather:
      return !fused && call.collective == tpcommCollAllGather;
  }
  return false;
}

CallPlan forcedVariantRules(const CommFacts& f, const Call& call) {
  const int want = f.knobs.variant;
  const char* name = variantRow(want)->name;
  // A quantized wire's row names its codec: forcing it opts in, at any size.
  LaunchKnobs base = f.knobs;
  if (variantRow(want)->wire != 0) {
    base.wire = variantRow(want)->wire;
    base.wire_min_bytes = 0;
  }
  CommFacts g = f;
  g.knobs = base;
  g.knobs.variant = -1;
  const CallPlan natural = planCall(g, call);
  // A fused row forced by name runs where the tuning table would run the pair.
  g.tuned_fused_unfused_below = 0;
  CallPlan p = natural;
  const char* missing = missingTransport(f, want);
  const bool ready = missing == nullptr;
  bool found = ready && runs(natural, call, want);
  if (ready && !found && f.tuned_fused_unfused_below > 0) {  // the planner's choice without it
    p = planCall(g, call);
    found = runs(p, call, want);
  }
  // The epilogue kernel's row is the unfused pair: the all-reduce as planned, then that kernel,
  // whichever fused kernel would take the call (tpcomm tune measures the pair this way).
  if (!found && call.rows > 0 && natural.decision.error == tpcommSuccess &&
      variantRow(want)->collective == VariantCollective::kEpilogue) {
    unfusedAfter(f, call, natural.variant, "", &p.epilogue);
    found = p.epilogue.variant == want;
  }
  for (int algo = tpcommAlgoOneShot; ready && !found && algo < tpcommNumAlgos; ++algo)
    for (int option = 0; !found && option < kOptions; ++option) {
      g.forced_algo = algo;
      g.knobs = withOption(base, option);
      g.knobs.variant = -1;
      p = planCall(g, call);
      found = runs(p, call, want);
    }
  std::string& reason = call.rows > 0 ? p.epilogue.reason : p.decision.reason;
  if (found) {
    reason = "variant=" + std::string(name) + " (forced); " + reason;
    return p;
  }
  CallPlan refused;
  refused.decision.error = tpcommUnsupported;
  const int chosen = plannedVariant(natural, call);
  const std::string shape =
      call.rows > 0 ? strFormat("%zu rows of %zu (%zu bytes)", call.rows, call.hidden, call.bytes)
                    : strFormat("%zu bytes%s", call.bytes, call.aligned ? "" : ", not aligned");
  refused.decision.reason =
      "variant=" + std::string(name) + " (forced) cannot take this call of " + shape + ": " +
      (ready ? "no rule gives it that call on this communicator"
             : std::string("its transport (") + missing + ") is not set up on this communicator") +
      "; the planner would run " +
      (natural.decision.error == tpcommSuccess && variantRow(chosen) ? variantRow(chosen)->name
                                                                     : "nothing") +
      " here";
  refused.epilogue.reason = refused.decision.reason;
  return refused;
}

}  // namespace tpcomm
