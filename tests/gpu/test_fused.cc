// tpcommAllReduceAddRmsNorm against the host reference (tests/support/rmsnorm_reference.h):
// every rank's residual_out bit for bit, the norm within an ulp of its format, every rank's
// outputs bit-identical, over the fused one-shot (peer memory and host memory) and the unfused
// path (the all-reduce, then the add+RMSNorm kernel) for the calls the fused kernel does not take.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "tests/gpu/harness.h"
#include "tests/support/rmsnorm_reference.h"

namespace tpcomm::test {
namespace {

struct FusedCase {
  RmsNormCase rc;
  bool residual_in_place = false;
  bool norm_into_input = false;
  // Bytes added to every buffer of ranks 1.. (rank 0's stay 16-byte aligned): the plan must not
  // follow one rank's pointers, or the ranks would run different calls (comm/call/fused_staging.h).
  size_t misalign = 0;
};

struct RankBufs {
  void *x = nullptr, *res_in = nullptr, *res_out = nullptr, *norm = nullptr, *gamma = nullptr,
       *scale = nullptr;
  ~RankBufs() {
    for (void* p : {x, res_in, res_out, norm, gamma, scale}) cudaFree(p);
  }
};

std::string nameOf(const FusedCase& f, int algo, int world) {
  const RmsNormCase& c = f.rc;
  return std::string(tpcommAlgoName(algo)) + " world=" + std::to_string(world) + " " +
         dtypeName(c.dtype) + " T=" + std::to_string(c.rows) + " H=" + std::to_string(c.hidden) +
         (c.gemma ? " gemma" : "") + (c.scale > 0 ? " fp8" : "") +
         (f.residual_in_place ? " residual-in-place" : "") +
         (f.norm_into_input ? " norm-into-x" : "") +
         (f.misalign ? " misaligned+" + std::to_string(f.misalign) + " on ranks 1.." : "");
}

enum class Path { kFused, kUnfused, kAny };
// How the fused kernel splits a row (the plan's reason says it, plan/fused_plan.cc).
enum class Split { kAny, kCluster, kBlockPerRow };
constexpr const char* kClusterNote = "rows over clusters of ";

// Runs one fused call on every rank of g and checks it. The planner (tpcommCommExplainAddRmsNorm,
// CPU-tested in test_fused_plan.cc) says whether the fused kernel serves it or the unfused path,
// whose all-reduce rounds the sums to T before the add; `want` pins that where the case is meant
// to reach one of them, and the call must then have run what the planner said.
void runFused(Group& g, int algo, const FusedCase& f, Path want, Split split = Split::kAny) {
  const RmsNormCase& c = f.rc;
  const std::string what = nameOf(f, algo, g.world);
  tpcommRmsNormParams_t ep = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  ep.quantScale = c.scale > 0 ? &c.scale : nullptr;  // only tested for NULL by Explain
  tpcommCallInfo_t plan{};
  ASSERT_EQ(tpcommCommExplainAddRmsNorm(g.comms[0], c.rows, c.hidden, c.dtype, &ep, &plan),
            tpcommSuccess)
      << what << ": " << tpcommGetLastError();
  const bool fused = std::string(plan.reason).rfind("fused", 0) == 0;
  if (want != Path::kAny) {
    ASSERT_EQ(fused, want == Path::kFused) << what << ": " << plan.reason;
  }
  if (split != Split::kAny) {
    const std::string why = plan.reason;
    const bool cluster = why.find(kClusterNote) != std::string::npos;
    // Ranks sharing a GPU: where the rows' clusters do not all fit the co-residency cap, the
    // planner keeps a block per row (a cluster owns one row), and says so.
    const bool capped = why.find("a block per row (co-resident cap)") != std::string::npos;
    if (!(split == Split::kCluster && capped)) {
      ASSERT_EQ(cluster, split == Split::kCluster) << what << ": " << plan.reason;
    }
  }
  const size_t es = elemSize(c.dtype), n = c.rows * c.hidden, out_es = c.scale > 0 ? 1 : es;
  std::vector<std::vector<uint8_t>> x;
  for (int r = 0; r < g.world; ++r) x.push_back(makeInput(c.dtype, n, 77 + c.hidden, r));
  const std::vector<uint8_t> res = makeInput(c.dtype, n, 78 + c.rows, 100);
  const std::vector<uint8_t> gamma = makeInput(c.dtype, c.hidden, 79, 101);
  // The all-reduce as the kernels compute it: fp32, rank order.
  std::vector<float> ar(n);
  for (size_t i = 0; i < n; ++i) {
    float acc = static_cast<float>(toDouble(c.dtype, x[0].data() + i * es));
    for (int r = 1; r < g.world; ++r)
      acc += static_cast<float>(toDouble(c.dtype, x[r].data() + i * es));
    if (!fused) {  // the unfused path's all-reduce output is T
      uint8_t t[4];
      fromDouble(c.dtype, acc, t);
      acc = static_cast<float>(toDouble(c.dtype, t));
    }
    ar[i] = acc;
  }
  const RmsNormExpected want = rmsNormReference(c, ar, res, gamma);

  std::vector<RankBufs> b(g.world);
  // A rank's view of one of its buffers: rank 0's as allocated, the others' misaligned.
  const auto at = [&](void* p, int r) -> void* {
    return static_cast<char*>(p) + (r > 0 ? f.misalign : 0);
  };
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    ASSERT_EQ(cudaMalloc(&b[r].x, n * es + 16), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&b[r].res_in, n * es + 16), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&b[r].res_out, n * es + 16), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&b[r].norm, n * es + 16), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&b[r].gamma, c.hidden * es + 16), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&b[r].scale, 4), cudaSuccess);
    cudaMemset(b[r].x, 0xCD, n * es + 16);
    cudaMemset(b[r].res_in, 0xCD, n * es + 16);
    cudaMemcpy(at(b[r].x, r), x[r].data(), n * es, cudaMemcpyHostToDevice);
    cudaMemcpy(at(b[r].res_in, r), res.data(), n * es, cudaMemcpyHostToDevice);
    cudaMemcpy(at(b[r].gamma, r), gamma.data(), c.hidden * es, cudaMemcpyHostToDevice);
    cudaMemcpy(b[r].scale, &c.scale, 4, cudaMemcpyHostToDevice);
    cudaMemset(b[r].res_out, 0xCD, n * es + 16);
    cudaMemset(b[r].norm, 0xCD, n * es + 16);
    cudaDeviceSynchronize();
  }
  tpcommRmsNormParams_t p = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  p.eps = c.eps;
  p.weightOffset = c.gemma ? 1 : 0;
  {
    GroupScope group;
    for (int r = 0; r < g.world; ++r) {
      p.quantScale = c.scale > 0 ? static_cast<const float*>(b[r].scale) : nullptr;
      void* res_out = at(f.residual_in_place ? b[r].res_in : b[r].res_out, r);
      void* norm = at(f.norm_into_input ? b[r].x : b[r].norm, r);
      ASSERT_EQ(tpcommAllReduceAddRmsNorm(at(b[r].x, r), at(b[r].res_in, r), res_out, norm,
                                          at(b[r].gamma, r), c.rows, c.hidden, c.dtype, &p,
                                          g.comms[r], g.streams[r]),
                tpcommSuccess)
          << what << ": " << tpcommGetLastError();
    }
  }
  tpcommCallInfo_t info{};
  ASSERT_EQ(tpcommCommGetLastCall(g.comms[0], &info), tpcommSuccess);
  EXPECT_EQ(info.variant, plan.variant) << what << ": " << info.reason;

  std::vector<uint8_t> first_res, first_norm;
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    ASSERT_EQ(cudaStreamSynchronize(g.streams[r]), cudaSuccess) << what;
    tpcommResult_t async = tpcommSuccess;
    tpcommCommGetAsyncError(g.comms[r], &async);
    ASSERT_EQ(async, tpcommSuccess) << what << ": rank " << r;
    // The whole allocation, and the call's bytes at the rank's offset within it.
    std::vector<uint8_t> whole(n * es + 16), got_norm(n * out_es);
    cudaMemcpy(whole.data(), f.residual_in_place ? b[r].res_in : b[r].res_out, n * es + 16,
               cudaMemcpyDeviceToHost);
    const size_t off = r > 0 ? f.misalign : 0;
    std::vector<uint8_t> got_res(whole.begin() + off, whole.begin() + off + n * es);
    cudaMemcpy(got_norm.data(), at(f.norm_into_input ? b[r].x : b[r].norm, r), n * out_es,
               cudaMemcpyDeviceToHost);
    size_t bad_res = 0, bad_norm = 0;
    for (size_t i = 0; i < n; ++i) {
      if (memcmp(got_res.data() + i * es, want.residual_out.data() + i * es, es) != 0) ++bad_res;
      if (!normClose(c, want.norm[i], got_norm.data() + i * out_es) && bad_norm++ < 3)
        ADD_FAILURE() << what << ": rank " << r << " norm[" << i << "] want " << want.norm[i];
    }
    EXPECT_EQ(bad_res, 0u) << what << ": rank " << r << " residual_out differs";
    EXPECT_EQ(bad_norm, 0u) << what << ": rank " << r;
    for (size_t i = 0; i < whole.size(); ++i)
      if (i < off || i >= off + n * es) {
        EXPECT_EQ(whole[i], 0xCD) << what << ": rank " << r << " wrote outside residual_out";
      }
    if (r == 0) {
      first_res = got_res;
      first_norm = got_norm;
    } else {
      EXPECT_TRUE(first_res == got_res && first_norm == got_norm)
          << what << ": rank " << r << "'s outputs differ from rank 0's";
    }
  }
}

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
    cfg.launchKnobs = "fused_cluster=1";
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

// CUDA graphs: 20 fused calls captured per rank and replayed 50 times give on every rank the bits
// of the eager call (the same inputs: residual out of place), with clusters and with a block per
// row; prints the replay's time per call for both (a rough number, the ranks share the GPU:
// tpcomm-bench-fused measures).
void graphReplayMatches(const char* knobs, size_t rows, size_t hidden) {
  const tpcommDataType_t dt = tpcommBfloat16;
  tpcommConfig_t cfg = configFor(tpcommAlgoAuto);
  cfg.launchKnobs = knobs;
  std::string err;
  auto g = makeGroup(2, &cfg, 0, &err);
  ASSERT_TRUE(g) << err;
  const size_t n = rows * hidden, bytes = n * 2;
  std::vector<RankBufs> b(g->world);
  const std::vector<uint8_t> res = makeInput(dt, n, 5, 100), gamma = makeInput(dt, hidden, 6, 101);
  for (int r = 0; r < g->world; ++r) {
    cudaSetDevice(g->devs[r]);
    const std::vector<uint8_t> x = makeInput(dt, n, 4, r);
    for (void** p : {&b[r].x, &b[r].res_in, &b[r].res_out, &b[r].norm})
      ASSERT_EQ(cudaMalloc(p, bytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&b[r].gamma, hidden * 2), cudaSuccess);
    cudaMemcpy(b[r].x, x.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(b[r].res_in, res.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(b[r].gamma, gamma.data(), hidden * 2, cudaMemcpyHostToDevice);
  }
  tpcommRmsNormParams_t p = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  const auto enqueue = [&]() {
    tpcommGroupStart();
    for (int r = 0; r < g->world; ++r)
      if (tpcommAllReduceAddRmsNorm(b[r].x, b[r].res_in, b[r].res_out, b[r].norm, b[r].gamma, rows,
                                    hidden, dt, &p, g->comms[r], g->streams[r]) != tpcommSuccess)
        return tpcommGroupEnd(), false;
    tpcommGroupEnd();
    return true;
  };
  const auto outputs = [&](int r) {
    std::vector<uint8_t> out(2 * bytes);
    cudaSetDevice(g->devs[r]);
    cudaStreamSynchronize(g->streams[r]);
    cudaMemcpy(out.data(), b[r].res_out, bytes, cudaMemcpyDeviceToHost);
    cudaMemcpy(out.data() + bytes, b[r].norm, bytes, cudaMemcpyDeviceToHost);
    return out;
  };
  ASSERT_TRUE(enqueue()) << tpcommGetLastError();
  std::vector<std::vector<uint8_t>> eager;
  for (int r = 0; r < g->world; ++r) eager.push_back(outputs(r));
  tpcommCallInfo_t info{};
  tpcommCommGetLastCall(g->comms[0], &info);

  constexpr int kCalls = 20, kReplays = 50;
  std::vector<cudaGraphExec_t> exec(g->world);
  for (int r = 0; r < g->world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaStreamBeginCapture(g->streams[r], cudaStreamCaptureModeGlobal), cudaSuccess);
  }
  for (int i = 0; i < kCalls; ++i) ASSERT_TRUE(enqueue()) << tpcommGetLastError();
  // Every capture ends before any instantiation (refused while a stream captures, global mode).
  std::vector<cudaGraph_t> graphs(g->world);
  for (int r = 0; r < g->world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaStreamEndCapture(g->streams[r], &graphs[r]), cudaSuccess);
  }
  for (int r = 0; r < g->world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaGraphInstantiate(&exec[r], graphs[r], 0), cudaSuccess);
    cudaGraphDestroy(graphs[r]);
  }
  // Poisoned on the legacy stream, which does not order the ranks' non-blocking streams: each
  // device drained before the replays, so that what is checked was written by them.
  for (int r = 0; r < g->world; ++r) {
    cudaSetDevice(g->devs[r]);
    cudaMemset(b[r].res_out, 0xCD, bytes);
    cudaMemset(b[r].norm, 0xCD, bytes);
    cudaDeviceSynchronize();
  }
  const auto start = std::chrono::steady_clock::now();
  for (int rep = 0; rep < kReplays; ++rep)
    for (int r = 0; r < g->world; ++r) {
      cudaSetDevice(g->devs[r]);
      ASSERT_EQ(cudaGraphLaunch(exec[r], g->streams[r]), cudaSuccess);
    }
  for (int r = 0; r < g->world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaStreamSynchronize(g->streams[r]), cudaSuccess);
  }
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      (kCalls * kReplays);
  printf("[ fused    ] graph T=%zu H=%zu %s: %.2f us per call (%d blocks; %s)\n", rows, hidden,
         knobs ? knobs : "default", us, info.blocks, info.reason);
  for (int r = 0; r < g->world; ++r) {
    tpcommResult_t async = tpcommSuccess;
    tpcommCommGetAsyncError(g->comms[r], &async);
    ASSERT_EQ(async, tpcommSuccess) << "rank " << r;
    EXPECT_TRUE(outputs(r) == eager[r]) << "rank " << r << ": replay differs from the eager call";
    EXPECT_TRUE(eager[r] == eager[0]) << "rank " << r << " differs from rank 0";
    cudaGraphExecDestroy(exec[r]);
  }
}

TEST(Fused, GraphReplayClusterAndBlockPerRow) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  for (size_t t : {size_t{1}, size_t{16}, size_t{64}}) {
    graphReplayMatches(nullptr, t, 7168);            // the default: clusters where the rows' fit
    graphReplayMatches("fused_cluster=0", t, 7168);  // a block per row
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

}  // namespace
}  // namespace tpcomm::test
