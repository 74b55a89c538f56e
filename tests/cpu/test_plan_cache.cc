// One communicator's plan cache (plan/plan_cache.h): a repeated call is not planned again, a
// changed one is, and the kinds of call (each collective, the fused call, each across machines)
// keep their own last plans, so alternating kinds does not re-plan either.
#include <gtest/gtest.h>

#include <functional>

#include "plan/plan_cache.h"
#include "support/plan_facts.h"

namespace tpcomm {
namespace {

struct Counted {
  CommFacts facts = factsFor(2, Fabric::kNvlink);
  int asked = 0;
  CommFacts operator()() {
    ++asked;
    return facts;
  }
};

TEST(PlanCache, ARepeatedCallIsPlannedOnce) {
  PlanCache cache;
  Counted facts;
  const CallPlan& a = cache.get(Call{4096, true}, false, std::ref(facts));
  EXPECT_EQ(a.variant, planCall(facts.facts, Call{4096, true}).variant);
  EXPECT_EQ(&cache.get(Call{4096, true}, false, std::ref(facts)), &a);
  EXPECT_EQ(facts.asked, 1);
  // Alignment, size, collective and the fused shapes are all part of the call.
  cache.get(Call{4096, false}, false, std::ref(facts));
  EXPECT_EQ(facts.asked, 2);
  cache.get(Call{8192, false}, false, std::ref(facts));
  EXPECT_EQ(facts.asked, 3);
  Call fused = fusedCall(1, 2048, tpcommBfloat16, false);
  EXPECT_EQ(cache.get(fused, false, std::ref(facts)).epilogue.variant,
            planCall(facts.facts, fused).epilogue.variant);
  fused.fp8 = true;
  EXPECT_TRUE(isFusedVariant(cache.get(fused, false, std::ref(facts)).epilogue.variant));
  EXPECT_EQ(cache.get(fused, false, std::ref(facts)).epilogue.variant,
            tpcommVariantFusedP2pOneShotFp8);
  EXPECT_EQ(facts.asked, 5);
}

TEST(PlanCache, EachKindOfCallKeepsItsOwnPlan) {
  PlanCache cache;
  Counted facts;
  const Call ar{1 << 20, true};
  const Call rs{1 << 20, true, tpcommCollReduceScatter};
  const Call ag{1 << 20, true, tpcommCollAllGather};
  const Call fused = fusedCall(4, 4096, tpcommBfloat16, false);
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(cache.get(ar, false, std::ref(facts)).variant, planCall(facts.facts, ar).variant);
    EXPECT_EQ(cache.get(rs, false, std::ref(facts)).variant, planCall(facts.facts, rs).variant);
    EXPECT_EQ(cache.get(ag, false, std::ref(facts)).variant, planCall(facts.facts, ag).variant);
    EXPECT_EQ(cache.get(fused, false, std::ref(facts)).epilogue.variant,
              planCall(facts.facts, fused).epilogue.variant);
    // The same call across machines is another kind: its legs, with the spanning facts.
    facts.facts.nodes = 2;
    EXPECT_FALSE(cache.get(ar, true, std::ref(facts)).node.text.empty());
    facts.facts.nodes = 1;
  }
  EXPECT_EQ(facts.asked, 5);
  EXPECT_TRUE(cache.get(ar, false, std::ref(facts)).node.text.empty());
}

}  // namespace
}  // namespace tpcomm
