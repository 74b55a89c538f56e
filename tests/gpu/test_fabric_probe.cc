// The fabric probe on the lent GPU: within its time bound, every number measured, and judged
// healthy. With one GPU the "pair" is two ranks' buffers on that GPU: it measures local memory and
// launches, not a link (printed and judged as such: push_fine, "one GPU: ..."); with two GPUs the
// pair 0-1 is measured too.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/runtime/fabric_probe_run.h"
#include "topo/probe/fabric_probe.h"

namespace tpcomm::topo {
namespace {

using Clock = std::chrono::steady_clock;

void print(const char* label, const LinkSpeed& s) {
  printf("  %-40s stores %8.1f GB/s  loads %8.1f GB/s  copies %8.1f GB/s  one-way %6.2f us\n",
         label, s.store_gbps, s.load_gbps, s.copy_gbps, s.latency_us);
}

void expectMeasured(const LinkSpeed& s, bool latency, const char* what) {
  EXPECT_GT(s.store_gbps, 0) << what;
  EXPECT_GT(s.load_gbps, 0) << what;
  EXPECT_GT(s.copy_gbps, 0) << what;
  if (latency) {
    EXPECT_GT(s.latency_us, 0) << what;
    EXPECT_LT(s.latency_us, 50) << what;  // a flag crossing: ~0.7 us NVLink, ~1.4 host memory
  }
}

FabricProbe probe(const std::vector<int>& gpus, int budget_ms, double* wall_ms) {
  FabricProbe p;
  std::string why;
  const Clock::time_point t0 = Clock::now();
  EXPECT_TRUE(runFabricProbe(gpus, budget_ms, &p, &why)) << why;
  EXPECT_EQ(p.gpus, gpus);  // judgeFabric tells one GPU from two by them
  *wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return p;
}

TEST(FabricProbeGpu, TwoRanksOnOneGpuAreHealthyWithinTheBound) {
  double wall = 0;
  const FabricProbe p = probe({0, 0}, 3000, &wall);
  printf(
      "fabric probe, two ranks' buffers on GPU 0 (local memory and launches, not a link): "
      "%.0f ms (wall %.0f ms)\n",
      p.elapsed_ms, wall);
  ASSERT_EQ(p.pairs.size(), 1u);
  print("GPU 0 -> GPU 0 (another buffer)", p.pairs[0].speed);
  print("all pairs at once, per rank", p.all_pairs);
  print("GPU 0 <-> pinned host memory (PCIe)", p.host);
  EXPECT_TRUE(p.error.empty()) << p.error;
  EXPECT_TRUE(p.sameGpu());
  expectMeasured(p.pairs[0].speed, true, "the pair");
  expectMeasured(p.all_pairs, false, "all pairs");
  expectMeasured(p.host, true, "host memory");
  EXPECT_LT(wall, 5000);  // the 3 s budget plus set-up
  const FabricFinding f = judgeFabric(p, true);
  printf("  verdict %s: %s\n", fabricVerdictName(f.verdict), f.what.c_str());
  // Two buffers on one GPU: push_fine for ranks sharing it, labelled as no link (judgeFabric).
  EXPECT_EQ(f.verdict, FabricVerdict::kPushFine) << f.what;
  EXPECT_EQ(f.what.rfind("one GPU: two buffers on it", 0), 0u) << f.what;
}

TEST(FabricProbeGpu, TwoGpusAreHealthy) {
  int n = 0;
  cudaGetDeviceCount(&n);
  if (n < 2) GTEST_SKIP() << "one GPU lent";
  double wall = 0;
  const FabricProbe p = probe({0, 1}, 3000, &wall);
  printf("fabric probe, GPU 0 and GPU 1: %.0f ms\n", p.elapsed_ms);
  ASSERT_EQ(p.pairs.size(), 1u);
  print("GPU 0 -> GPU 1", p.pairs[0].speed);
  print("all pairs at once, per GPU", p.all_pairs);
  print("GPU 0 <-> pinned host memory", p.host);
  EXPECT_TRUE(p.error.empty()) << p.error;
  expectMeasured(p.pairs[0].speed, true, "the pair");
  EXPECT_EQ(judgeFabric(p, true).verdict, FabricVerdict::kPushFine);
}

// A budget spent during set-up: nothing is measured, the probe says why and returns at once.
TEST(FabricProbeGpu, ASpentBudgetStopsItCleanly) {
  double wall = 0;
  const FabricProbe p = probe({0, 0}, 1, &wall);
  printf("fabric probe with a 1 ms budget: %.1f ms, %s\n", wall, p.error.c_str());
  EXPECT_NE(p.error.find("budget"), std::string::npos) << p.error;
  EXPECT_LT(p.all_pairs.store_gbps, 0);
  EXPECT_LT(wall, 2000);
  EXPECT_EQ(judgeFabric(p, true).verdict, FabricVerdict::kUnknown);
}

}  // namespace
}  // namespace tpcomm::topo
