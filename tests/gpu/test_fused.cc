// tpcommAllReduceAddRmsNorm against the host reference (fused_check.h): over the fused one-shot
// (peer memory and host memory) and the unfused path (the all-reduce, then the add+RMSNorm
// kernel) for the calls the fused kernel does not take. The pull wires: test_fused_pull.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "kernels/runtime/variant_table.h"
#include "tests/gpu/fused_check.h"

namespace tpcomm::test {
namespace {

// The sizes engines run (hidden sizes of Llama, DeepSeek, Qwen, Kimi models) at decode and small
// prefill token counts, plus hidden sizes that are not whole 16-byte vectors (unfused path).
void runMatrix(int world, int algo, bool light, int timeout_ms = 20000) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const tpcommConfig_t cfg = configFor(algo, 0, timeout_ms);
  std::string err;
  auto g = makeGroup(world, &cfg, 0, &err);
  ASSERT_TRUE(g) << err;
  const size_t hiddens[] = {128, 4096, 6144, 7168, 8192, 16384};
  const size_t tokens[] = {1, 2, 4, 16, 64, 256};
  for (size_t h : hiddens)
    for (size_t t : tokens) {
      if (light && t > 16 && h != 7168) continue;
      // Decode-sized calls (up to 16 rows of 8192) always fit the fused one-shot's one step.
      const Path want = t * h <= 16 * 8192 ? Path::kFused : Path::kAny;
      runFused(*g, algo, {{tpcommBfloat16, t, h, 1e-6f, false, 0.f}}, want);
    }
  for (size_t h : {size_t{7}, size_t{1001}})
    runFused(*g, algo, {{tpcommBfloat16, 3, h, 1e-6f, false, 0.f}}, Path::kUnfused);
  if (light) return;
  runFused(*g, algo, {{tpcommFloat16, 4, 7168, 1e-5f, true, 0.f}}, Path::kFused);
  runFused(*g, algo, {{tpcommFloat32, 4, 4096, 1e-6f, false, 0.f}}, Path::kFused);
  runFused(*g, algo, {{tpcommBfloat16, 8, 7168, 1e-6f, false, 0.05f}}, Path::kFused);
  runFused(*g, algo, {{tpcommFloat16, 2, 6144, 1e-6f, true, 3.f}}, Path::kFused);
  runFused(*g, algo, {{tpcommBfloat16, 4, 7168, 1e-6f, false, 0.f}, true, true}, Path::kFused);
  runFused(*g, algo, {{tpcommBfloat16, 4, 7168, 1e-6f, false, 0.5f}, true, false}, Path::kFused);
  // FP8 over the unfused path (rows that are not whole vectors), residual out of place.
  runFused(*g, algo, {{tpcommBfloat16, 3, 1001, 1e-6f, false, 0.5f}}, Path::kUnfused);
}

// The cluster split's edges, each against the reference: H not a multiple of the cluster (the
// last block's slice is shorter: 7176 = 897 vectors over 8, 2056 = 257 over 4, 4104 = 513 over
// 8), clusters shrinking as the rows grow (17 rows: 4 a row, 64: 2, or a block per row where the
// co-residency cap has no room for them), every dtype, Gemma, FP8, the in-place forms (knob
// fused_cluster=1, the default); then the same calls with one block per row (fused_cluster=0),
// which must match the reference as well.
void runSplitMatrix(const char* knobs, Split split) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  int major = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  if (split == Split::kCluster && major < 9) GTEST_SKIP() << "no thread-block clusters below sm_90";
  tpcommConfig_t cfg = configFor(tpcommAlgoAuto);
  cfg.launchKnobs = knobs;
  std::string err;
  auto g = makeGroup(2, &cfg, 0, &err);
  ASSERT_TRUE(g) << err;
  for (size_t h : {size_t{7168}, size_t{7176}, size_t{2056}, size_t{4104}, size_t{6152}})
    for (size_t t : {size_t{1}, size_t{3}, size_t{16}, size_t{17}, size_t{64}})
      runFused(*g, tpcommAlgoAuto, {{tpcommBfloat16, t, h, 1e-6f, false, 0.f}}, Path::kFused,
               split);
  const Path f = Path::kFused;
  runFused(*g, tpcommAlgoAuto, {{tpcommBfloat16, 2, 16384, 1e-6f, false, 0.f}}, f, split);
  runFused(*g, tpcommAlgoAuto, {{tpcommFloat16, 5, 7176, 1e-5f, true, 0.f}}, f, split);
  runFused(*g, tpcommAlgoAuto, {{tpcommFloat32, 3, 7176, 1e-6f, false, 0.f}}, f, split);
  runFused(*g, tpcommAlgoAuto, {{tpcommBfloat16, 4, 7176, 1e-6f, false, 0.05f}}, f, split);
  runFused(*g, tpcommAlgoAuto, {{tpcommFloat16, 17, 2056, 1e-6f, true, 3.f}}, f, split);
  runFused(*g, tpcommAlgoAuto, {{tpcommBfloat16, 3, 7176, 1e-6f, false, 0.f}, true, true}, f,
           split);
  runFused(*g, tpcommAlgoAuto, {{tpcommBfloat16, 3, 7176, 1e-6f, false, 0.5f}, true, false}, f,
           split);
}

TEST(Fused, ClusterSplitEdges) {
  runSplitMatrix("fused_cluster=1", Split::kCluster);
}
TEST(Fused, BlockPerRowKnob) {
  runSplitMatrix("fused_cluster=0", Split::kBlockPerRow);
}

// Ranks sharing one GPU cap every rank's grid so that all of them are resident
// (plan/co_residency.h), and launch no clusters (a cluster needs free SMs of one GPC, which the
// cap cannot promise): a block per row, and the reason says so. With a GPU per rank (2+ GPUs), a
// cluster owns one row. Worlds 4 and 8, 1, 16 and 64 rows of 7168: the plan is checked (one
// cluster per row, or the cap's note) and the call against the reference. Prints the grids.
TEST(Fused, ClustersShrinkUnderTheCoResidencyCap) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  int major = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  if (major < 9) GTEST_SKIP() << "no thread-block clusters below sm_90";
  for (int w : {4, 8}) {
    tpcommConfig_t cfg = configFor(tpcommAlgoAuto, 0, 5000);
    cfg.launchKnobs = "fused_cluster=1,fused_twoshot_rows=0";  // the push one-shot at 64 rows too
    std::string err;
    auto g = makeGroup(w, &cfg, 0, &err);
    ASSERT_TRUE(g) << err;
    for (size_t t : {size_t{1}, size_t{16}, size_t{64}}) {
      const FusedCase fc{{tpcommBfloat16, t, 7168, 1e-6f, false, 0.f}};
      tpcommRmsNormParams_t ep = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
      tpcommCallInfo_t plan{};
      ASSERT_EQ(tpcommCommExplainAddRmsNorm(g->comms[0], t, 7168, tpcommBfloat16, &ep, &plan),
                tpcommSuccess);
      const char* at = strstr(plan.reason, kClusterNote);
      const int cluster = at ? atoi(at + strlen(kClusterNote)) : 1;
      printf("[ fused    ] world=%d T=%zu: %d blocks, clusters of %d (%s)\n", w, t, plan.blocks,
             cluster, plan.reason);
      if (cluster > 1) {
        EXPECT_EQ(static_cast<size_t>(plan.blocks), t * static_cast<size_t>(cluster))
            << plan.reason;
      } else {
        EXPECT_NE(strstr(plan.reason, "a block per row (co-resident cap)"), nullptr) << plan.reason;
      }
      runFused(*g, tpcommAlgoAuto, fc, Path::kFused, cluster > 1 ? Split::kCluster : Split::kAny);
      if (HasFailure()) return;
    }
  }
}

// CUDA graphs (graphReplayMatches, fused_check.h) with clusters where the rows' fit (the default)
// and with a block per row.
TEST(Fused, GraphReplayClusterAndBlockPerRow) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (size_t t : {size_t{1}, size_t{16}, size_t{64}}) {
    graphReplayMatches(tpcommAlgoAuto, nullptr, t, 7168);
    graphReplayMatches(tpcommAlgoAuto, "fused_cluster=0", t, 7168);
    if (HasFailure()) return;
  }
}

// Only rank 0's buffers are 16-byte aligned; the others' are 2, 4 or 8 bytes off (every buffer,
// the in-place forms and FP8 included). Every rank must run the fused kernel the plan names
// (tpcommCommGetLastCall on rank 0 and on the last rank), with the reference's bits, the same on
// every rank. Worlds 2, 3 and 8, over peer memory and host memory. The old plan followed each
// rank's pointers: rank 0 fused, the others unfused, and every rank failed with
// tpcommInvalidUsage ("the ranks disagreed on a call").
TEST(Fused, MixedAlignmentAcrossRanks) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (int algo : {tpcommAlgoAuto, tpcommAlgoHostOneShot})
    for (int w : {2, 3, 8}) {
      const tpcommConfig_t cfg = configFor(algo, 0, 5000);
      std::string err;
      auto g = makeGroup(w, &cfg, 0, &err);
      ASSERT_TRUE(g) << err;
      const Path f = Path::kFused;
      runFused(*g, algo, {{tpcommBfloat16, 1, 4096, 1e-6f, false, 0.f}, false, false, 2}, f);
      runFused(*g, algo, {{tpcommBfloat16, 4, 7168, 1e-6f, false, 0.f}, true, true, 8}, f);
      runFused(*g, algo, {{tpcommFloat32, 2, 4096, 1e-6f, true, 0.f}, false, false, 4}, f);
      runFused(*g, algo, {{tpcommFloat16, 3, 6144, 1e-6f, false, 0.5f}, true, false, 2}, f);
      tpcommCallInfo_t last{};
      ASSERT_EQ(tpcommCommGetLastCall(g->comms[w - 1], &last), tpcommSuccess);
      EXPECT_EQ(std::string(last.reason).rfind("fused", 0), 0u)
          << "world " << w << " rank " << w - 1 << ": " << last.reason;
      if (HasFailure()) return;
    }
}

TEST(Fused, World2OneShot) {
  runMatrix(2, tpcommAlgoAuto, false);
}
TEST(Fused, World2HostOneShot) {
  runMatrix(2, tpcommAlgoHostOneShot, false);
}
// Ranks sharing GPUs with the default grids: the library caps the fused kernel's grid and the
// unfused path's all-reduce so that every rank's grid is resident at once (plan/co_residency.h).
// Without the cap, the unfused all-reduce of 256 rows of 7168 (3.5 MiB; beyond one step from
// world 5 on) waited for the deadline once the ranks' grids overfilled one GPU.
TEST(Fused, Worlds3To8SharingGpus) {
  for (int w = 3; w <= 8; ++w) {
    const auto start = std::chrono::steady_clock::now();
    runMatrix(w, tpcommAlgoAuto, true, 5000);
    printf("[ fused    ] world=%d default grids: %.1f s\n", w,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (HasFailure()) return;
  }
}

// Every fused row by name (TPCOMM_KNOBS=variant=<name>), as RowWorld does the all-reduce's: at
// worlds 2 and 4 sharing the GPU, 1, 16 and 128 rows of 7168 bf16 (an FP8 output for the FP8
// rows). Each call either runs that row, with the reference's bits (runFused), or is refused by
// Explain naming the row; nothing else runs under its name. Before 7d17798 the fused one-shots
// were refused from 64 rows (128 at two ranks), though the knob fused_twoshot_rows=0 runs them.
TEST(Fused, EveryFusedRowByName) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  int rows = 0;
  const VariantRow* table = variantRows(&rows);
  bool oneshot_pull_ran_128 = false;
  for (int world : {2, 4})
    for (int i = 0; i < rows; ++i) {
      const VariantRow& row = table[i];
      if (!row.kernels || (row.collective != VariantCollective::kFused &&
                           row.collective != VariantCollective::kEpilogue))
        continue;
      SCOPED_TRACE(std::string(row.name) + " world " + std::to_string(world));
      const bool fp8 = strstr(row.name, "_fp8") != nullptr;
      tpcommConfig_t cfg = configFor(tpcommAlgoAuto, 0, 5000);
      const std::string knobs = std::string("variant=") + row.name;
      cfg.launchKnobs = knobs.c_str();
      std::string err;
      auto g = makeGroup(world, &cfg, 0, &err);
      ASSERT_TRUE(g) << err;
      int ran = 0, refused = 0;
      for (size_t t : {size_t{1}, size_t{16}, size_t{128}}) {
        const float scale = fp8 ? 0.5f : 0.f;
        tpcommRmsNormParams_t ep = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
        ep.quantScale = fp8 ? &scale : nullptr;
        tpcommCallInfo_t plan{};
        if (tpcommCommExplainAddRmsNorm(g->comms[0], t, 7168, tpcommBfloat16, &ep, &plan) ==
            tpcommUnsupported) {
          EXPECT_NE(
              strstr(tpcommGetLastError(), (knobs + " (forced) cannot take this call").c_str()),
              nullptr)
              << tpcommGetLastError();
          ++refused;
          continue;
        }
        FusedBits bits;
        runFused(*g, tpcommAlgoAuto, {{tpcommBfloat16, t, 7168, 1e-6f, false, scale}}, Path::kAny,
                 Split::kAny, &bits);
        EXPECT_EQ(bits.variant, row.name) << t << " rows";
        if (HasFailure()) return;
        oneshot_pull_ran_128 |= world == 4 && t == 128 && knobs == "variant=fused_p2p_oneshot_pull";
        ++ran;
      }
      printf("[ fused row] %s world=%d: %d ran, %d refused by name\n", row.name, world, ran,
             refused);
    }
  EXPECT_TRUE(oneshot_pull_ran_128) << "fused_p2p_oneshot_pull at 128 rows on four ranks";
}

}  // namespace
}  // namespace tpcomm::test
