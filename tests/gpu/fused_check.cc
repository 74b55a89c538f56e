// The fused call's checker (fused_check.h).
#include "tests/gpu/fused_check.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>

namespace tpcomm::test {
namespace {

struct RankBufs {
  void *x = nullptr, *res_in = nullptr, *res_out = nullptr, *norm = nullptr, *gamma = nullptr,
       *scale = nullptr;
  ~RankBufs() {
    for (void* p : {x, res_in, res_out, norm, gamma, scale}) cudaFree(p);
  }
};

}  // namespace

std::string nameOf(const FusedCase& f, int algo, int world) {
  const RmsNormCase& c = f.rc;
  return std::string(tpcommAlgoName(algo)) + " world=" + std::to_string(world) + " " +
         dtypeName(c.dtype) + " T=" + std::to_string(c.rows) + " H=" + std::to_string(c.hidden) +
         (c.gemma ? " gemma" : "") + (c.scale > 0 ? " fp8" : "") +
         (f.residual_in_place ? " residual-in-place" : "") +
         (f.norm_into_input ? " norm-into-x" : "") +
         (f.misalign ? " misaligned+" + std::to_string(f.misalign) + " on ranks 1.." : "");
}

void runFused(Group& g, int algo, const FusedCase& f, Path want, Split split, FusedBits* bits) {
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
  // The all-reduce as its variants compute it: fp32, rank order; the island schedules (island,
  // island_pull and their fused forms) in island order, each island's partial, then island 0's +
  // island 1's. Ranks sharing a GPU have no topology islands: the first and the second half of
  // the ranks are the islands (comm/lifecycle/fabric.cc).
  const bool island = plan.algo == tpcommAlgoIsland || plan.algo == tpcommAlgoIslandPull;
  const int m = island ? g.world / 2 : g.world;
  const auto sumRanks = [&](size_t i, int from, int to) {
    float acc = static_cast<float>(toDouble(c.dtype, x[from].data() + i * es));
    for (int r = from + 1; r < to; ++r)
      acc += static_cast<float>(toDouble(c.dtype, x[r].data() + i * es));
    return acc;
  };
  std::vector<float> ar(n);
  for (size_t i = 0; i < n; ++i)  // rounded to T by the reference, as on every path
    ar[i] = island ? sumRanks(i, 0, m) + sumRanks(i, m, g.world) : sumRanks(i, 0, g.world);
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
  if (bits) *bits = FusedBits{first_res, first_norm, tpcommVariantName(info.variant)};
}

// CUDA graphs: 20 fused calls captured per rank and replayed 50 times give on every rank the bits
// of the eager call (the same inputs: residual out of place), with clusters and with a block per
// row; prints the replay's time per call for both (a rough number, the ranks share the GPU:
// tpcomm-bench-fused measures).
void runFusedMatrix(int world, int algo, const char* knobs, size_t buffer_bytes, bool light,
                    const char* variant) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  tpcommConfig_t cfg = configFor(algo, 0, 5000);
  cfg.launchKnobs = knobs;
  cfg.bufferBytes = buffer_bytes;
  std::string err;
  auto g = makeGroup(world, &cfg, 0, &err);
  ASSERT_TRUE(g) << err;
  const Path f = Path::kFused;
  for (size_t h : {size_t{128}, size_t{4096}, size_t{7168}})
    for (size_t t : {size_t{1}, size_t{3}, size_t{17}, size_t{64}, size_t{130}}) {
      if (light && t != 3 && t != 130) continue;
      FusedBits bits;
      runFused(*g, algo, {{tpcommBfloat16, t, h, 1e-6f, false, 0.f}}, f, Split::kAny, &bits);
      EXPECT_EQ(bits.variant, variant) << "world " << world << " T=" << t;
      if (::testing::Test::HasFailure()) return;
    }
  runFused(*g, algo, {{tpcommFloat16, 9, 7168, 1e-5f, true, 0.f}}, f);
  runFused(*g, algo, {{tpcommFloat32, 20, 4096, 1e-6f, false, 0.f}}, f);
  runFused(*g, algo, {{tpcommBfloat16, 33, 7168, 1e-6f, false, 0.05f}}, f);
  runFused(*g, algo, {{tpcommBfloat16, 12, 7168, 1e-6f, false, 0.f}, true, true}, f);
  runFused(*g, algo, {{tpcommFloat16, 10, 6144, 1e-6f, true, 3.f}, true, false}, f);
  runFused(*g, algo, {{tpcommBfloat16, 70, 4096, 1e-6f, false, 0.f}, false, false, 4}, f);
}

void graphReplayMatches(int algo, const char* knobs, size_t rows, size_t hidden, int world) {
  const tpcommDataType_t dt = tpcommBfloat16;
  tpcommConfig_t cfg = configFor(algo);
  cfg.launchKnobs = knobs;
  std::string err;
  auto g = makeGroup(world, &cfg, 0, &err);
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

}  // namespace tpcomm::test
