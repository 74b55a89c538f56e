// A failed call leaves NaN in its outputs, never stale numbers (docs/PROTOCOL.md, "Bounded waits":
// what a failed call leaves in its outputs). One rank never calls; the others' call ends with
// tpcommTimeout, and every element of their outputs, filled with finite garbage before, must be
// NaN: eager, and replayed from a CUDA graph. Then the broken communicator: a later eager call
// returns the error at once and leaves NaN in its outputs (after a stream sync), and a graph
// captured before the failure, replayed now, fills its outputs with NaN. All-reduce over every
// forced algorithm and auto, the fused all-reduce + add + RMSNorm (FP8 output where the GPU has
// it), reduce-scatter and all-gather. Without poisoning, every output here keeps the garbage.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/lifecycle/nccl_watchdog.h"
#include "tests/gpu/harness.h"
#include "tests/gpu/spin_kernel.h"

namespace tpcomm::test {
namespace {

enum class Coll { kAllReduce, kFused, kFusedFp8, kReduceScatter, kAllGather };

const char* collName(Coll c) {
  switch (c) {
    case Coll::kAllReduce:
      return "all-reduce";
    case Coll::kFused:
      return "all-reduce+rmsnorm";
    case Coll::kFusedFp8:
      return "all-reduce+rmsnorm fp8";
    case Coll::kReduceScatter:
      return "reduce-scatter";
    case Coll::kAllGather:
      return "all-gather";
  }
  return "?";
}

struct PoisonCase {
  Coll coll;
  int algo;
  int world;
  tpcommDataType_t dt;
  size_t count;   // all-reduce: elements; reduce-scatter / all-gather: per rank; fused: tokens
  size_t hidden;  // fused only
  size_t buffer_bytes = 0;      // config.bufferBytes (0: default): small slots make many steps
  const char* knobs = nullptr;  // config.launchKnobs
  int max_blocks = 0;
  bool in_place = false;  // all-reduce only
};

std::string nameOf(const PoisonCase& k) {
  std::string s = std::string(collName(k.coll)) + " " + tpcommAlgoName(k.algo) +
                  " world=" + std::to_string(k.world) + " " + dtypeName(k.dt) +
                  " count=" + std::to_string(k.count);
  if (k.hidden) s += " hidden=" + std::to_string(k.hidden);
  if (k.buffer_bytes) s += " buffer=" + std::to_string(k.buffer_bytes);
  if (k.knobs) s += std::string(" knobs=") + k.knobs;
  if (k.in_place) s += " in-place";
  return s;
}

bool fused(Coll c) {
  return c == Coll::kFused || c == Coll::kFusedFp8;
}

bool fp8Capable() {
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  return major > 8 || (major == 8 && minor >= 9);
}

// One output of a call: `elems` elements of dt, or of FP8 e4m3 bytes.
struct Output {
  void* p;
  size_t elems;
  bool fp8;
};

// Every rank's buffers for one case, and the call itself.
class Calls {
 public:
  Calls(Group& g, const PoisonCase& k) : g_(g), k_(k), es_(elemSize(k.dt)) {
    const size_t n = fused(k.coll) ? k.count * k.hidden : k.count;
    const size_t w = static_cast<size_t>(k.world);
    in_elems_ = k.coll == Coll::kReduceScatter ? w * n : n;
    out_elems_ = k.coll == Coll::kAllGather ? w * n : n;
    bufs_.resize(k.world);
    for (int r = 0; r < k.world; ++r) {
      cudaSetDevice(g.devs[r]);
      Bufs& b = bufs_[r];
      ok_ = ok_ && cudaMalloc(&b.in, in_elems_ * es_ + 16) == cudaSuccess;
      const std::vector<uint8_t> x = makeInput(k.dt, in_elems_, 31, r);
      cudaMemcpy(b.in, x.data(), x.size(), cudaMemcpyHostToDevice);
      if (!k.in_place) ok_ = ok_ && cudaMalloc(&b.out, out_elems_ * es_ + 16) == cudaSuccess;
      if (fused(k.coll)) {
        ok_ = ok_ && cudaMalloc(&b.res_in, n * es_) == cudaSuccess &&
              cudaMalloc(&b.norm, n * es_) == cudaSuccess &&
              cudaMalloc(&b.gamma, k.hidden * es_) == cudaSuccess &&
              cudaMalloc(&b.scale, sizeof(float)) == cudaSuccess;
        const std::vector<uint8_t> res = makeInput(k.dt, n, 32, 100);
        const std::vector<uint8_t> gamma = makeInput(k.dt, k.hidden, 33, 101);
        const float scale = 0.5f;
        cudaMemcpy(b.res_in, res.data(), res.size(), cudaMemcpyHostToDevice);
        cudaMemcpy(b.gamma, gamma.data(), gamma.size(), cudaMemcpyHostToDevice);
        cudaMemcpy(b.scale, &scale, sizeof(scale), cudaMemcpyHostToDevice);
      }
    }
    cudaDeviceSynchronize();
  }
  ~Calls() {
    for (int r = 0; r < static_cast<int>(bufs_.size()); ++r) {
      cudaSetDevice(g_.devs[r]);
      for (void* p : {bufs_[r].in, bufs_[r].out, bufs_[r].res_in, bufs_[r].norm, bufs_[r].gamma,
                      bufs_[r].scale})
        cudaFree(p);
    }
  }
  bool ok() const { return ok_; }

  // Enqueues rank r's call on s.
  tpcommResult_t call(int r, cudaStream_t s) {
    Bufs& b = bufs_[r];
    tpcommComm_t c = g_.comms[r];
    void* out = k_.in_place ? b.in : b.out;
    switch (k_.coll) {
      case Coll::kAllReduce:
        return tpcommAllReduce(b.in, out, k_.count, k_.dt, tpcommSum, c, s);
      case Coll::kReduceScatter:
        return tpcommReduceScatter(b.in, out, k_.count, k_.dt, c, s);
      case Coll::kAllGather:
        return tpcommAllGather(b.in, out, k_.count, k_.dt, c, s);
      case Coll::kFused:
      case Coll::kFusedFp8: {
        tpcommRmsNormParams_t p = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
        p.quantScale = k_.coll == Coll::kFusedFp8 ? static_cast<const float*>(b.scale) : nullptr;
        return tpcommAllReduceAddRmsNorm(b.in, b.res_in, out, b.norm, b.gamma, k_.count, k_.hidden,
                                         k_.dt, &p, c, s);
      }
    }
    return tpcommInternalError;
  }

  std::vector<Output> outputs(int r) const {
    const Bufs& b = bufs_[r];
    void* out = k_.in_place ? b.in : b.out;
    if (!fused(k_.coll)) return {{out, out_elems_, false}};
    return {{out, out_elems_, false}, {b.norm, out_elems_, k_.coll == Coll::kFusedFp8}};
  }

  // Rank r's outputs filled with finite garbage (0x3C bytes: about 0.0115 in fp32 and bf16, 1.06
  // in fp16, 1.5 in e4m3), or, in place, its input's numbers: what a call that writes nothing
  // leaves there.
  void garbage(int r) {
    cudaSetDevice(g_.devs[r]);
    if (k_.in_place) {
      const std::vector<uint8_t> x = makeInput(k_.dt, in_elems_, 34, r);
      cudaMemcpy(bufs_[r].in, x.data(), x.size(), cudaMemcpyHostToDevice);
    } else {
      for (const Output& o : outputs(r)) cudaMemset(o.p, 0x3C, o.elems * (o.fp8 ? 1 : es_));
    }
    cudaDeviceSynchronize();  // the legacy stream does not order the ranks' streams
  }

  // Elements of rank r's outputs that are not NaN (its stream drained before).
  size_t notNaN(int r) const {
    cudaSetDevice(g_.devs[r]);
    size_t bad = 0;
    for (const Output& o : outputs(r)) {
      const size_t es = o.fp8 ? 1 : es_;
      std::vector<uint8_t> h(o.elems * es);
      cudaMemcpy(h.data(), o.p, h.size(), cudaMemcpyDeviceToHost);
      for (size_t i = 0; i < o.elems; ++i) {
        const bool nan = o.fp8 ? (h[i] & 0x7F) == 0x7F : std::isnan(toDouble(k_.dt, &h[i * es]));
        bad += nan ? 0 : 1;
      }
    }
    return bad;
  }

 private:
  struct Bufs {
    void *in = nullptr, *out = nullptr, *res_in = nullptr, *norm = nullptr, *gamma = nullptr,
         *scale = nullptr;
  };
  Group& g_;
  PoisonCase k_;
  size_t es_;
  size_t in_elems_ = 0, out_elems_ = 0;
  std::vector<Bufs> bufs_;
  bool ok_ = true;
};

std::unique_ptr<Group> groupFor(const PoisonCase& k, std::string* err) {
  // ncclMode off for auto too: NCCL's kernels cannot be poisoned (README, "When a call fails").
  tpcommConfig_t cfg = configFor(k.algo, k.max_blocks, /*timeout_ms=*/300);
  cfg.ncclMode = tpcommNcclOff;
  cfg.bufferBytes = k.buffer_bytes;
  cfg.launchKnobs = k.knobs;
  return makeGroup(k.world, &cfg, 0, err);
}

// The calling ranks (all but the last, which never calls).
int callers(const PoisonCase& k) {
  return k.world - 1;
}

// One graph per calling rank holding one call, captured on every rank's stream together.
std::vector<cudaGraphExec_t> captureCalls(Group& g, Calls& calls, int ranks) {
  std::vector<cudaGraphExec_t> exec(ranks, nullptr);
  std::vector<cudaGraph_t> graphs(ranks, nullptr);
  bool ok = true;
  for (int r = 0; r < ranks; ++r) {
    cudaSetDevice(g.devs[r]);
    ok = ok && cudaStreamBeginCapture(g.streams[r], cudaStreamCaptureModeGlobal) == cudaSuccess;
  }
  for (int r = 0; r < ranks && ok; ++r) {
    const tpcommResult_t res = calls.call(r, g.streams[r]);
    EXPECT_EQ(res, tpcommSuccess) << "captured call, rank " << r << ": " << tpcommGetLastError();
    ok = res == tpcommSuccess;
  }
  // Every capture ends before any instantiation (refused while a stream captures, global mode).
  for (int r = 0; r < ranks; ++r) {
    cudaSetDevice(g.devs[r]);
    ok = cudaStreamEndCapture(g.streams[r], &graphs[r]) == cudaSuccess && ok;
  }
  for (int r = 0; r < ranks; ++r) {
    cudaSetDevice(g.devs[r]);
    if (ok) ok = cudaGraphInstantiate(&exec[r], graphs[r], 0) == cudaSuccess;
    if (graphs[r]) cudaGraphDestroy(graphs[r]);
  }
  EXPECT_TRUE(ok) << "capture failed";
  return exec;
}

void destroy(std::vector<cudaGraphExec_t>& exec) {
  for (cudaGraphExec_t e : exec)
    if (e) cudaGraphExecDestroy(e);
  exec.clear();
}

// Every calling rank's stream drains without a CUDA error, its communicator reports `want`, and
// none of its output elements is anything but NaN.
void expectPoisoned(Group& g, Calls& calls, int ranks, tpcommResult_t want, const std::string& at) {
  for (int r = 0; r < ranks; ++r) {
    cudaSetDevice(g.devs[r]);
    ASSERT_EQ(cudaStreamSynchronize(g.streams[r]), cudaSuccess) << at << ": rank " << r;
    tpcommResult_t async = tpcommSuccess;
    ASSERT_EQ(tpcommCommGetAsyncError(g.comms[r], &async), tpcommSuccess);
    EXPECT_EQ(async, want) << at << ": rank " << r;
    EXPECT_EQ(calls.notNaN(r), 0u) << at << ": rank " << r << "'s output holds numbers";
  }
}

// The eager path: the failing call, a later eager call on the broken communicator, and a graph
// captured before the failure replayed after it.
void eagerThenBroken(const PoisonCase& k) {
  const std::string name = nameOf(k);
  SCOPED_TRACE(name);
  std::string err;
  auto g = groupFor(k, &err);
  ASSERT_TRUE(g) << err;
  Calls calls(*g, k);
  ASSERT_TRUE(calls.ok()) << "allocation failed";
  const int n = callers(k);
  std::vector<cudaGraphExec_t> exec = captureCalls(*g, calls, n);
  ASSERT_EQ(exec.size(), static_cast<size_t>(n));

  // 1. The failing call.
  for (int r = 0; r < n; ++r) calls.garbage(r);
  {
    GroupScope group;
    for (int r = 0; r < n; ++r)
      ASSERT_EQ(calls.call(r, g->streams[r]), tpcommSuccess) << tpcommGetLastError();
  }
  expectPoisoned(*g, calls, n, tpcommTimeout, "the failing call");

  // 2. A later eager call: refused at once, its outputs NaN once its stream has drained.
  for (int r = 0; r < n; ++r) {
    calls.garbage(r);
    EXPECT_EQ(calls.call(r, g->streams[r]), tpcommTimeout) << "rank " << r;
  }
  expectPoisoned(*g, calls, n, tpcommTimeout, "a later eager call");

  // 3. The graph captured before the failure, replayed on the broken communicator.
  for (int r = 0; r < n; ++r) calls.garbage(r);
  for (int r = 0; r < n; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaGraphLaunch(exec[r], g->streams[r]), cudaSuccess);
  }
  expectPoisoned(*g, calls, n, tpcommTimeout, "a replay after the failure");
  destroy(exec);
}

// The failing call replayed from a graph (what an engine's decode loop runs).
void failInGraph(const PoisonCase& k) {
  const std::string name = nameOf(k) + " (graph)";
  SCOPED_TRACE(name);
  std::string err;
  auto g = groupFor(k, &err);
  ASSERT_TRUE(g) << err;
  Calls calls(*g, k);
  ASSERT_TRUE(calls.ok()) << "allocation failed";
  // Captured on every rank's stream; the last rank never replays its graph.
  std::vector<cudaGraphExec_t> exec = captureCalls(*g, calls, k.world);
  ASSERT_EQ(exec.size(), static_cast<size_t>(k.world));
  const int n = callers(k);
  for (int r = 0; r < n; ++r) calls.garbage(r);
  for (int r = 0; r < n; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaGraphLaunch(exec[r], g->streams[r]), cudaSuccess);
  }
  expectPoisoned(*g, calls, n, tpcommTimeout, "the failing replay");
  destroy(exec);
}

template <typename F>
void runCases(const std::vector<PoisonCase>& cases, F run) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const bool fp8 = fp8Capable();
  for (const PoisonCase& k : cases) {
    if (k.coll == Coll::kFusedFp8 && !fp8) {
      printf("[ poison   ] %s: skipped (FP8 output needs sm_89+)\n", nameOf(k).c_str());
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    run(k);
    printf("[ poison   ] %s: %.2f s\n", nameOf(k).c_str(),
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (::testing::Test::HasFatalFailure()) return;
  }
}

constexpr size_t kSmallSlots = size_t{256} << 10;  // config.bufferBytes: 1 MiB calls in steps

TEST(Poison, AllReduceEveryAlgorithm) {
  using C = PoisonCase;
  const Coll ar = Coll::kAllReduce;
  runCases(
      {
          C{ar, tpcommAlgoAuto, 2, tpcommBfloat16, 1024, 0},     // the lean one-shot
          C{ar, tpcommAlgoAuto, 3, tpcommBfloat16, 1 << 20, 0},  // whatever auto runs at 3
          // The general one-shot: pushing and reducing warps split over many steps; a partial
          // last vector; in place.
          C{ar, tpcommAlgoOneShot, 2, tpcommBfloat16, 1 << 19, 0, kSmallSlots},
          C{ar, tpcommAlgoOneShot, 3, tpcommFloat16, 4099, 0},
          C{ar, tpcommAlgoOneShot, 2, tpcommFloat32, 1024, 0, 0, nullptr, 0, true},
          C{ar, tpcommAlgoTwoShot, 2, tpcommBfloat16, 1 << 19, 0, kSmallSlots},
          C{ar, tpcommAlgoTwoShot, 3, tpcommFloat32, 5001, 0},
          C{ar, tpcommAlgoOneShotPull, 2, tpcommBfloat16, 1024, 0},  // the LL pull
          C{ar, tpcommAlgoOneShotPull, 2, tpcommBfloat16, 1024, 0, 0, "pull_ll_bytes=0"},
          C{ar, tpcommAlgoOneShotPull, 3, tpcommBfloat16, 1 << 19, 0, kSmallSlots},
          C{ar, tpcommAlgoTwoShotPull, 3, tpcommBfloat16, 1 << 19, 0, kSmallSlots},
          // The quantized wire (twoshot_pull_wire.cu): many steps in INT8, a partial group in
          // FP8 over fp32.
          C{ar, tpcommAlgoTwoShotPull, 2, tpcommBfloat16, 1 << 19, 0, kSmallSlots,
            "wire=int8,wire_min_bytes=0"},
          C{ar, tpcommAlgoTwoShotPull, 3, tpcommFloat32, 5001, 0, 0, "wire=fp8,wire_min_bytes=0"},
          // Its push form (twoshot_wire.cu: INT4 in many steps, FP8 e5m2 over fp16) and its host
          // form (INT8 over host outboxes, many steps).
          C{ar, tpcommAlgoTwoShot, 2, tpcommBfloat16, 1 << 19, 0, kSmallSlots,
            "wire=int4,wire_min_bytes=0"},
          C{ar, tpcommAlgoTwoShot, 3, tpcommFloat16, 5001, 0, 0, "wire=fp8_e5m2,wire_min_bytes=0"},
          C{ar, tpcommAlgoHostTwoShot, 2, tpcommBfloat16, 1 << 19, 0, kSmallSlots,
            "wire=int8,wire_min_bytes=0"},
          C{ar, tpcommAlgoHostOneShot, 2, tpcommBfloat16, 1024, 0},  // the host sentinel
          C{ar, tpcommAlgoHostOneShot, 3, tpcommBfloat16, 4097, 0, 0, kHostLLKnobs},
          C{ar, tpcommAlgoHostTwoShot, 2, tpcommBfloat16, 1 << 18, 0},
          C{ar, tpcommAlgoHostBulk, 2, tpcommBfloat16, 1 << 19, 0},
          C{ar, tpcommAlgoIsland, 4, tpcommBfloat16, 1 << 19, 0, kSmallSlots, nullptr, 4},
          C{ar, tpcommAlgoIslandPull, 4, tpcommBfloat16, 1 << 19, 0, kSmallSlots, nullptr, 4},
          C{ar, tpcommAlgoOneShotCe, 2, tpcommBfloat16, 1 << 19, 0, kSmallSlots},
      },
      eagerThenBroken);
}

TEST(Poison, FusedAddRmsNorm) {
  using C = PoisonCase;
  const Coll f = Coll::kFused, q = Coll::kFusedFp8;
  runCases(
      {
          C{f, tpcommAlgoAuto, 2, tpcommBfloat16, 4, 7168},  // clusters per row on sm_90+
          C{f, tpcommAlgoAuto, 2, tpcommFloat16, 3, 4096, 0, "fused_cluster=0"},  // block per row
          C{f, tpcommAlgoAuto, 3, tpcommBfloat16, 16, 7168},
          C{q, tpcommAlgoAuto, 2, tpcommBfloat16, 4, 7168},
          C{f, tpcommAlgoHostOneShot, 2, tpcommBfloat16, 2, 4096},  // over host memory
          // Over pull (fused_pull.cu, fused_twoshot_pull.cu): the flag wire, the LL wire, the
          // two-shot in one step (64 rows) and in many (small slots), FP8.
          C{f, tpcommAlgoOneShotPull, 2, tpcommBfloat16, 4, 7168, 0, "pull_ll_bytes=0"},
          C{f, tpcommAlgoOneShotPull, 2, tpcommBfloat16, 2, 7168, 0,
            "pull_ll_bytes=65536,fused_pull_ll=1"},
          C{f, tpcommAlgoOneShotPull, 2, tpcommBfloat16, 64, 7168, 0, "pull_ll_bytes=0"},
          C{q, tpcommAlgoOneShotPull, 3, tpcommBfloat16, 70, 4096, 1 << 20,
            "fused_twoshot_rows=1,pull_ll_bytes=0"},
          // The fused two-shot's push form (fused_twoshot_push.cu): one step, many in FP8.
          C{f, tpcommAlgoTwoShot, 2, tpcommBfloat16, 64, 7168, 0,
            "fused_twoshot_rows=1,fused_twoshot_push=1"},
          C{q, tpcommAlgoTwoShot, 3, tpcommBfloat16, 70, 4096, 1 << 20,
            "fused_twoshot_rows=1,fused_twoshot_push=1"},
          // The fused island over pull (fused_island_pull.cu): one step, and many in FP8.
          C{f, tpcommAlgoIslandPull, 4, tpcommBfloat16, 16, 7168, 0, nullptr, 4},
          C{q, tpcommAlgoIslandPull, 4, tpcommBfloat16, 130, 4096, 1 << 20, nullptr, 4},
          // The fused island over pushes (fused_twoshot_push.cu, kIsland): one step, many in FP8.
          C{f, tpcommAlgoIsland, 4, tpcommBfloat16, 16, 7168, 0, nullptr, 4},
          C{q, tpcommAlgoIsland, 4, tpcommBfloat16, 130, 4096, 1 << 20, nullptr, 4},
          // Rows that are not whole vectors: the all-reduce, then the epilogue kernel, which
          // carries the all-reduce's NaN into residual_out and the norm (FP8 too).
          C{f, tpcommAlgoAuto, 2, tpcommBfloat16, 3, 1001},
          C{q, tpcommAlgoAuto, 2, tpcommBfloat16, 3, 1001},
      },
      eagerThenBroken);
}

TEST(Poison, ReduceScatterAndAllGather) {
  using C = PoisonCase;
  std::vector<PoisonCase> cases;
  for (Coll c : {Coll::kReduceScatter, Coll::kAllGather}) {
    cases.push_back(C{c, tpcommAlgoAuto, 2, tpcommBfloat16, 4096, 0});
    cases.push_back(C{c, tpcommAlgoTwoShot, 2, tpcommBfloat16, 1 << 18, 0, kSmallSlots});
    cases.push_back(C{c, tpcommAlgoTwoShot, 3, tpcommFloat16, 1001, 0});  // partial vectors
    cases.push_back(C{c, tpcommAlgoTwoShotPull, 3, tpcommBfloat16, 1 << 17, 0, kSmallSlots});
    cases.push_back(C{c, tpcommAlgoHostTwoShot, 2, tpcommFloat32, 1 << 16, 0});
  }
  runCases(cases, eagerThenBroken);
}

TEST(Poison, FailingCallInAGraph) {
  using C = PoisonCase;
  const Coll ar = Coll::kAllReduce;
  runCases(
      {
          C{ar, tpcommAlgoAuto, 2, tpcommBfloat16, 1024, 0},
          C{ar, tpcommAlgoTwoShot, 3, tpcommBfloat16, 1 << 19, 0, kSmallSlots},
          C{ar, tpcommAlgoHostBulk, 2, tpcommBfloat16, 1 << 19, 0},
          C{ar, tpcommAlgoIslandPull, 4, tpcommBfloat16, 1 << 19, 0, kSmallSlots, nullptr, 4},
          C{ar, tpcommAlgoOneShotCe, 2, tpcommBfloat16, 1 << 19, 0, kSmallSlots},
          C{Coll::kFused, tpcommAlgoAuto, 2, tpcommBfloat16, 4, 7168},
          C{Coll::kFusedFp8, tpcommAlgoAuto, 2, tpcommBfloat16, 4, 7168},
          C{Coll::kFused, tpcommAlgoOneShotPull, 2, tpcommBfloat16, 64, 7168, 0, "pull_ll_bytes=0"},
          C{Coll::kReduceScatter, tpcommAlgoTwoShot, 2, tpcommBfloat16, 1 << 18, 0, kSmallSlots},
          C{Coll::kAllGather, tpcommAlgoTwoShotPull, 3, tpcommBfloat16, 1 << 17, 0, kSmallSlots},
      },
      failInGraph);
}

// The NCCL-served path's host side: a communicator broken by an NCCL call that hung (its watch
// fired; ranks sharing a GPU get no NCCL communicator, so the watch is installed by hand with a
// stand-in kernel, as in test_nccl_watchdog.cc) refuses every later call with tpcommTimeout and
// fills the call's outputs with NaN on its stream.
TEST(Poison, CommunicatorBrokenByAHungNcclCall) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  constexpr int kTimeoutMs = 100;
  for (Coll coll : {Coll::kAllReduce, Coll::kFused, Coll::kReduceScatter, Coll::kAllGather}) {
    const PoisonCase k{coll,           tpcommAlgoAuto,           2,
                       tpcommBfloat16, fused(coll) ? 2u : 4096u, fused(coll) ? 4096u : 0u};
    SCOPED_TRACE(nameOf(k));
    const tpcommConfig_t cfg = configFor(tpcommAlgoAuto, 0, kTimeoutMs);
    std::string err;
    auto g = makeGroup(2, &cfg, 0, &err);
    ASSERT_TRUE(g) << err;
    Calls calls(*g, k);
    ASSERT_TRUE(calls.ok());
    tpcommComm_t c = g->comms[0];
    cudaSetDevice(g->devs[0]);
    int* flag_host = nullptr;
    int* flag_dev = nullptr;
    ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&flag_host), sizeof(int), cudaHostAllocMapped),
              cudaSuccess);
    *reinterpret_cast<volatile int*>(flag_host) = 0;
    cudaHostGetDevicePointer(reinterpret_cast<void**>(&flag_dev), flag_host, 0);
    c->nccl_watch = std::make_unique<NcclWatch>(
        c->device, kTimeoutMs, [flag_host] { *reinterpret_cast<volatile int*>(flag_host) = 1; });
    cudaEvent_t start = nullptr;
    ASSERT_EQ(c->nccl_watch->begin(
                  g->streams[0],
                  [&] {
                    launchSpinUntilFlag(flag_dev, 10000, g->streams[0]);
                    return cudaGetLastError() == cudaSuccess ? tpcommSuccess
                                                             : tpcommUnhandledCudaError;
                  },
                  &start),
              tpcommSuccess);
    ASSERT_EQ(c->nccl_watch->finish(g->streams[0], start, "a stand-in NCCL call"), tpcommSuccess);
    ASSERT_EQ(cudaStreamSynchronize(g->streams[0]), cudaSuccess);  // the watch released it
    calls.garbage(0);
    EXPECT_EQ(calls.call(0, g->streams[0]), tpcommTimeout);
    ASSERT_EQ(cudaStreamSynchronize(g->streams[0]), cudaSuccess);
    EXPECT_EQ(calls.notNaN(0), 0u) << "the refused call's output holds numbers";
    c->nccl_watch->stop();
    cudaFreeHost(flag_host);
  }
}

}  // namespace
}  // namespace tpcomm::test
