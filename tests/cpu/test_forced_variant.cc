// TPCOMM_KNOBS=variant=<name> (plan/forced_variant.cc): the calls of that variant's collective run
// it wherever a rule can give it, other collectives keep the planner's choice, and a call it
// cannot take is refused with both names, never run as something else.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "plan/knobs.h"
#include "support/plan_facts.h"

namespace tpcomm {
namespace {

constexpr size_t kKiB = 1024;

CommFacts forcing(const char* name, int world = 2, Fabric fabric = Fabric::kNvlink) {
  CommFacts f = factsFor(world, fabric);
  const std::string why = parseLaunchKnobs(std::string("variant=") + name, &f.knobs);
  EXPECT_EQ(why, "") << name;
  return f;
}

std::string nameOf(int v) {
  const char* n = tpcommVariantName(v);
  return n ? n : "?";
}

TEST(ForcedVariant, TheKnobTakesANameOrAuto) {
  LaunchKnobs k;
  EXPECT_EQ(parseLaunchKnobs("variant=p2p_twoshot", &k), "");
  EXPECT_EQ(nameOf(k.variant), "p2p_twoshot");
  EXPECT_EQ(launchKnobsError(k, 512), "");
  EXPECT_EQ(parseLaunchKnobs("variant=auto", &k), "");
  EXPECT_EQ(k.variant, -1);
  const std::string bad = parseLaunchKnobs("variant=p2p_tweeshot", &k);
  EXPECT_NE(bad.find("variant=p2p_tweeshot: not a variant (known: auto, nccl, p2p_oneshot_lean"),
            std::string::npos)
      << bad;
  EXPECT_NE(parseLaunchKnobs("variant=none", &k), "");  // nothing to run
  EXPECT_NE(parseLaunchKnobs("variant=3", &k), "");     // names, not numbers
  EXPECT_NE(parseLaunchKnobs("nonsense=1", &k).find(", variant)"), std::string::npos);
  k.variant = 0;
  EXPECT_NE(launchKnobsError(k, 512).find("variant=0 is out of range"), std::string::npos);
}

TEST(ForcedVariant, TheCallsOfItsCollectiveRunIt) {
  // 4 KiB over NVLink: the planner's choice is the lean one-shot.
  EXPECT_EQ(nameOf(planCall(factsFor(2, Fabric::kNvlink), Call{4 * kKiB, true}).variant),
            "p2p_oneshot_lean");
  for (const char* name : {"p2p_oneshot", "p2p_twoshot", "p2p_oneshot_pull", "p2p_oneshot_pull_ll",
                           "p2p_oneshot_pull_lean", "p2p_twoshot_pull", "nccl"}) {
    const CallPlan p = planCall(forcing(name), Call{4 * kKiB, true});
    ASSERT_EQ(p.decision.error, tpcommSuccess) << name << ": " << p.decision.reason;
    EXPECT_EQ(nameOf(p.variant), name);
    EXPECT_EQ(p.decision.reason.rfind("variant=" + std::string(name) + " (forced); ", 0), 0u)
        << p.decision.reason;
  }
  // LL beyond pull_ll_bytes (16 KiB by default), up to what an LL slot holds.
  EXPECT_EQ(nameOf(planCall(forcing("p2p_oneshot_pull_ll"), Call{32 * kKiB, true}).variant),
            "p2p_oneshot_pull_ll");
  // Other collectives keep the planner's choice.
  const Call rs{64 * kKiB, true, tpcommCollReduceScatter};
  EXPECT_EQ(planCall(forcing("p2p_oneshot"), rs).variant,
            planCall(factsFor(2, Fabric::kNvlink), rs).variant);
  EXPECT_EQ(nameOf(planCall(forcing("p2p_reduce_scatter_pull"), rs).variant),
            "p2p_reduce_scatter_pull");
}

TEST(ForcedVariant, ACallItCannotTakeIsRefusedNamingBoth) {
  // The lean kernel needs aligned whole vectors; the host variants a host transport.
  CallPlan p = planCall(forcing("p2p_oneshot_lean"), Call{4 * kKiB, false});
  EXPECT_EQ(p.decision.error, tpcommUnsupported);
  EXPECT_NE(p.decision.reason.find("variant=p2p_oneshot_lean (forced) cannot take this call of "
                                   "4096 bytes"),
            std::string::npos)
      << p.decision.reason;
  EXPECT_NE(p.decision.reason.find("the planner would run p2p_oneshot here"), std::string::npos)
      << p.decision.reason;
  // Which of the two it is: no rule for this call, or a transport this communicator lacks.
  EXPECT_NE(p.decision.reason.find("4096 bytes, not aligned: no rule gives it that call"),
            std::string::npos)
      << p.decision.reason;
  p = planCall(forcing("host_oneshot_ll"), Call{4 * kKiB, true});
  EXPECT_EQ(p.decision.error, tpcommUnsupported) << nameOf(p.variant);
  EXPECT_NE(
      p.decision.reason.find(
          "4096 bytes: its transport (pinned host memory) is not set up on this communicator"),
      std::string::npos)
      << p.decision.reason;
  // A fused call is named by its rows.
  p = planCall(forcing("fused_p2p_oneshot_fp8"), fusedCall(16, 7168, tpcommBfloat16, false));
  EXPECT_NE(p.decision.reason.find("cannot take this call of 16 rows of 7168 (229376 bytes): no "
                                   "rule gives it"),
            std::string::npos)
      << p.decision.reason;
  // The copy engines' landing slots exist only where the algorithm was forced at init.
  EXPECT_EQ(planCall(forcing("p2p_oneshot_ce"), Call{64 * kKiB, true}).decision.error,
            tpcommUnsupported);
  CommFacts ce = factsFor(2, Fabric::kNvlink, tpcommAlgoOneShotCe);
  ce.forced_algo = -1;
  ASSERT_EQ(parseLaunchKnobs("variant=p2p_oneshot_ce", &ce.knobs), "");
  EXPECT_EQ(nameOf(planCall(ce, Call{64 * kKiB, true}).variant), "p2p_oneshot_ce");
}

TEST(ForcedVariant, TheFusedCallRunsAForcedFusedOrEpilogueRow) {
  const Call fused = fusedCall(1, 7168, tpcommBfloat16, false);
  EXPECT_EQ(nameOf(planCall(factsFor(2, Fabric::kNvlink), fused).epilogue.variant),
            "fused_p2p_oneshot");
  const CallPlan p = planCall(forcing("add_rmsnorm"), fused);
  ASSERT_EQ(p.decision.error, tpcommSuccess) << p.decision.reason;
  EXPECT_EQ(nameOf(p.epilogue.variant), "add_rmsnorm");
  EXPECT_EQ(p.epilogue.reason.rfind("variant=add_rmsnorm (forced); unfused: ", 0), 0u)
      << p.epilogue.reason;
  // An FP8 row for a call without FP8 output: refused.
  EXPECT_EQ(planCall(forcing("fused_p2p_oneshot_fp8"), fused).decision.error, tpcommUnsupported);
  // The pair keeps the all-reduce the planner gives the call, on every fabric and at every size
  // a fused kernel would take (tpcomm tune measures the pair this way).
  for (Fabric fabric : {Fabric::kNvlink, Fabric::kPcie, Fabric::kHost})
    for (size_t t : {size_t{1}, size_t{64}, size_t{256}}) {
      CommFacts f = factsFor(4, fabric);
      f.host_transport = fabric == Fabric::kHost;
      if (fabric == Fabric::kPcie) f.fabric_verdict = FabricVerdict::kWriteCollapse;
      const Call c = fusedCall(t, 7168, tpcommBfloat16, false);
      const CallPlan natural = planCall(f, c);
      ASSERT_EQ(parseLaunchKnobs("variant=add_rmsnorm", &f.knobs), "");
      const CallPlan pair = planCall(f, c);
      ASSERT_EQ(pair.decision.error, tpcommSuccess) << pair.decision.reason;
      EXPECT_EQ(nameOf(pair.epilogue.variant), "add_rmsnorm") << pair.epilogue.reason;
      EXPECT_EQ(pair.variant, natural.variant) << pair.epilogue.reason;
    }
}

// Every row the planner gives somewhere can be forced there, and the plan is the row's.
TEST(ForcedVariant, EveryReachableRowCanBeForced) {
  std::set<std::string> forced;
  for (int world : {2, 8})
    for (Fabric fabric : {Fabric::kNvlink, Fabric::kPcie, Fabric::kHost})
      for (int algo = -1; algo < tpcommNumAlgos; ++algo)
        for (size_t bytes : {4 * kKiB, 64 * kKiB, size_t{1} << 20})
          for (tpcommColl_t coll :
               {tpcommCollAllReduce, tpcommCollReduceScatter, tpcommCollAllGather}) {
            CommFacts f = factsFor(world, fabric, algo);
            f.two_islands = world == 8;
            const CallPlan natural = planCall(f, Call{bytes, true, coll});
            if (natural.decision.error != tpcommSuccess || !isKernelVariant(natural.variant))
              continue;
            CommFacts g = factsFor(world, fabric);  // auto: the search finds the algorithm
            g.two_islands = f.two_islands;
            g.ce_staging = f.ce_staging;
            g.knobs.variant = natural.variant;
            const CallPlan p = planCall(g, Call{bytes, true, coll});
            EXPECT_EQ(p.variant, natural.variant) << nameOf(natural.variant) << " world " << world
                                                  << " " << bytes << " B: " << p.decision.reason;
            forced.insert(nameOf(natural.variant));
          }
  EXPECT_GE(forced.size(), 18u);
}

// A communicator's facts as init builds them with `variant` forced: the transports the row needs
// set up (needsHostTransport, needsCeStaging), the algorithm auto.
CommFacts initFacts(int world, Fabric fabric, int variant) {
  CommFacts f = factsFor(world, fabric, /*forced_algo=*/-1, variant);
  f.knobs.variant = variant;
  return f;
}

// What a knob gives, the row's name gives too: on every fabric and world, with every algorithm
// forced or none, each plan-shaping knob at its ends, every collective and fused calls of 1-256
// rows, the row the plan runs can be forced by name for the same call. The search once set
// fused_twoshot_rows to 1 only, never to 0, so the fused one-shots were refused at the rows where
// the default takes the two-shot (fused_p2p_oneshot_pull at 128 rows on four ranks; 14 shapes).
TEST(ForcedVariant, EveryRowAKnobGivesCanBeForcedByName) {
  const char* const knobs[] = {"",
                               "lean=0",
                               "lean=1",
                               "host_sentinel=0",
                               "host_sentinel=1",
                               "pull_ll_bytes=0",
                               "pull_ll_bytes=65536",
                               "host_ll_bytes=0",
                               "host_ll_bytes=1073741824",
                               "fused_cluster=0",
                               "fused_pull_ll=0",
                               "fused_twoshot_rows=0",
                               "fused_twoshot_rows=1",
                               "fused_twoshot_push=1",
                               "oneshot_step_bytes=65536",
                               "wire=int8",
                               "wire=int4,wire_min_bytes=0",
                               "wire=fp8,wire_min_bytes=0"};
  std::vector<Call> calls;
  for (size_t bytes : {4 * kKiB, 32 * kKiB, 256 * kKiB, 1024 * kKiB, 16384 * kKiB})
    for (tpcommColl_t coll : {tpcommCollAllReduce, tpcommCollReduceScatter, tpcommCollAllGather})
      calls.push_back(Call{bytes, true, coll});
  for (size_t rows : {1, 16, 64, 256})
    for (bool fp8 : {false, true}) calls.push_back(fusedCall(rows, 7168, tpcommBfloat16, fp8));
  int checked = 0;
  std::set<std::string> rows_seen, missed;
  for (int world : {2, 4, 8})
    for (int fabric_case = 0; fabric_case < 4; ++fabric_case)
      for (int algo = -1; algo < tpcommNumAlgos; ++algo)
        for (const char* knob : knobs)
          for (const Call& call : calls) {
            const Fabric fabric = fabric_case == 0   ? Fabric::kNvlink
                                  : fabric_case == 3 ? Fabric::kHost
                                                     : Fabric::kPcie;
            CommFacts f = factsFor(world, fabric, algo);
            f.two_islands = world == 8;
            if (fabric_case == 2) f.fabric_verdict = FabricVerdict::kWriteCollapse;
            ASSERT_EQ(parseLaunchKnobs(knob, &f.knobs), "") << knob;
            const CallPlan natural = planCall(f, call);
            const tpcommVariant_t row = call.rows > 0 ? natural.epilogue.variant : natural.variant;
            if (natural.decision.error != tpcommSuccess || !isKernelVariant(row)) continue;
            CommFacts g = initFacts(world, fabric, row);
            g.two_islands = f.two_islands;
            g.fabric_verdict = f.fabric_verdict;
            const CallPlan p = planCall(g, call);
            const int ran = call.rows > 0 ? p.epilogue.variant : p.variant;
            ++checked;
            rows_seen.insert(nameOf(row));
            if (p.decision.error != tpcommSuccess || ran != row)
              missed.insert(nameOf(row) + " [" + knob + "], world " + std::to_string(world) +
                            ", fabric case " + std::to_string(fabric_case) + ": " +
                            p.decision.reason);
          }
  EXPECT_TRUE(missed.empty()) << missed.size() << " rows, first: " << *missed.begin();
  EXPECT_GT(checked, 30000);
  EXPECT_GE(rows_seen.size(), 40u);
  // The case that was refused, by name.
  const CallPlan p =
      planCall(forcing("fused_p2p_oneshot_pull", 4), fusedCall(128, 7168, tpcommBfloat16, false));
  EXPECT_EQ(nameOf(p.epilogue.variant), "fused_p2p_oneshot_pull") << p.decision.reason;
}

// A forced host-memory or copy-engine row gets its transport at init, as a forced algorithm does
// (needsHostTransport, needsCeStaging): without it every call of the row would be refused
// (transportReady), whatever the fabric. With it, the row runs there.
TEST(ForcedVariant, AForcedRowsTransportIsSetUpAtInit) {
  int rows = 0;
  const VariantRow* table = variantRows(&rows);
  std::set<std::string> ran;
  for (int i = 0; i < rows; ++i) {
    const VariantRow& r = table[i];
    if (!r.kernels) continue;
    const bool host = r.transport == VariantTransport::kHost;
    const bool ce = r.transport == VariantTransport::kCopyEngine;
    EXPECT_EQ(needsHostTransport(2, Fabric::kNvlink, -1, r.id), host) << r.name;
    EXPECT_EQ(needsCeStaging(-1, r.id), ce) << r.name;
    if (!host || r.collective != VariantCollective::kAllReduce || r.wire != 0) continue;
    // NVLink with the host transport set up, as init now does for this knob.
    const CommFacts f = initFacts(2, Fabric::kNvlink, r.id);
    ASSERT_TRUE(f.host_transport) << r.name;
    for (size_t bytes : {4 * kKiB, 64 * kKiB, 1024 * kKiB})
      if (planCall(f, Call{bytes, true}).variant == r.id) ran.insert(r.name);
    EXPECT_TRUE(ran.count(r.name)) << r.name << " runs no call over NVLink with the host transport";
  }
  EXPECT_GE(ran.size(), 5u);  // the host one-shots (sentinel, lean, LL), two-shot LL, bulk
  EXPECT_FALSE(needsHostTransport(2, Fabric::kNvlink, -1, -1));
  EXPECT_FALSE(needsHostTransport(1, Fabric::kNvlink, -1, tpcommVariantHostBulk));  // one rank
  EXPECT_FALSE(needsCeStaging(-1, -1));
}

// Every row with a kernel can be forced by name somewhere: on some fabric and world, for some
// call of its collective, the plan runs that row. A row no rule gives (forced_variant.cc asks the
// rules) would be a kernel nobody can run, not even a test.
TEST(ForcedVariant, EveryKernelRowCanBeForcedSomewhere) {
  int rows = 0;
  const VariantRow* table = variantRows(&rows);
  std::vector<Call> calls;
  for (size_t bytes : {4 * kKiB, 64 * kKiB, 1024 * kKiB, 16384 * kKiB})
    for (tpcommColl_t coll : {tpcommCollAllReduce, tpcommCollReduceScatter, tpcommCollAllGather})
      calls.push_back(Call{bytes, true, coll});
  for (size_t r : {1, 16, 256})
    for (bool fp8 : {false, true}) calls.push_back(fusedCall(r, 7168, tpcommBfloat16, fp8));
  int checked = 0;
  for (int i = 0; i < rows; ++i) {
    const VariantRow& row = table[i];
    if (!row.kernels) continue;
    bool found = false;
    for (int world : {2, 4, 8})
      for (Fabric fabric : {Fabric::kNvlink, Fabric::kPcie, Fabric::kHost})
        for (const Call& call : calls) {
          if (found) break;
          const CallPlan p = planCall(initFacts(world, fabric, row.id), call);
          const int ran = call.rows > 0 ? p.epilogue.variant : p.variant;
          found = p.decision.error == tpcommSuccess && ran == row.id;
        }
    EXPECT_TRUE(found) << row.name << " runs no call on any fabric or world when forced";
    ++checked;
  }
  EXPECT_GE(checked, 50);
}

}  // namespace
}  // namespace tpcomm
