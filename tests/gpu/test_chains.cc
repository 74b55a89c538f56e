// Chains of back-to-back calls with no host sync between them, that switch size, datatype,
// in-place-ness, alignment, collective and so algorithm and kernel variant from call to call,
// while one random rank runs late before about one call in four (a one-thread kernel spinning
// 25-100 us on its stream): what an engine's ranks do, and what the single-call and replay
// suites never did. Every rank of every configuration (worlds 2..8 sharing the GPUs, auto and
// every algorithm forced, all-reduce alone and mixed with the fused call, reduce-scatter and
// all-gather) must finish without an error, every output must equal an exact host reference
// (integer inputs: the sums are exact in every datatype) bit for bit, and the ranks' outputs must
// be bit-identical. Then the soak: many calls of the same kind checked on the GPU
// (TPCOMM_SOAK_CALLS, the run_suite.sh stage `soak` runs a million).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/gpu/check_kernel.h"
#include "tests/gpu/harness.h"
#include "tests/gpu/spin_kernel.h"
#include "tests/support/rmsnorm_reference.h"
#include "tests/support/wire_reference.h"

namespace tpcomm::test {
namespace {

enum class Kind { kAllReduce, kFused, kReduceScatter, kAllGather };

const char* kindName(Kind k) {
  switch (k) {
    case Kind::kAllReduce:
      return "AR";
    case Kind::kFused:
      return "fused";
    case Kind::kReduceScatter:
      return "RS";
    case Kind::kAllGather:
      return "AG";
  }
  return "?";
}

struct ChainCall {
  Kind kind = Kind::kAllReduce;
  tpcommDataType_t dt = tpcommBfloat16;
  size_t count = 0;               // AR: elements; RS: recvcount; AG: sendcount; fused: T x H
  size_t tokens = 0, hidden = 0;  // fused
  bool in_place = false;
  size_t offset = 0;   // elements added to every pointer, the same on every rank
  int late_rank = -1;  // a rank whose stream spins late_ns before this call
  unsigned late_ns = 0;
  uint64_t seed = 0;
  bool skipped = false;  // the forced algorithm has no plan for it (Explain said so)
  std::string plan;      // what rank 0 ran (variant, blocks), and where other ranks differ
};

// One rank's memory of one call: five sections (input, output, residual in, residual out,
// gamma), each 256-byte aligned plus the call's offset.
struct RankCall {
  char* base = nullptr;
  char* sec[5] = {};
  std::vector<uint8_t> in, res, gamma;  // the host copies of what was uploaded
};

constexpr size_t kMaxCount = size_t{4} << 20;  // elements of an all-reduce at most

// Small integers, so every sum of up to eight of them is exact in bf16, fp16 and fp32.
void fillInts(tpcommDataType_t dt, size_t n, uint64_t seed, std::vector<uint8_t>* out) {
  const size_t es = elemSize(dt);
  out->resize(n * es);
  parallelFor(n, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i)
      fromDouble(dt, static_cast<double>(static_cast<int>(mix(seed + i) % 17) - 8),
                 out->data() + i * es);
  });
}

// Elements of each section for a call at `world` ranks.
void sectionElems(const ChainCall& c, int world, size_t (&n)[5]) {
  for (size_t& x : n) x = 0;
  switch (c.kind) {
    case Kind::kAllReduce:
      n[0] = n[1] = c.count;
      break;
    case Kind::kReduceScatter:
      n[0] = c.count * world;
      n[1] = c.count;
      break;
    case Kind::kAllGather:
      n[0] = c.count;
      n[1] = c.count * world;
      break;
    case Kind::kFused:
      n[0] = n[1] = n[2] = n[3] = c.count;
      n[4] = c.hidden;
      break;
  }
}

struct ChainParam {
  int world;
  int algo;
  bool mixed;  // false: all-reduce only (the scenario as first reported)
  // Opted into a quantized wire (the knob wire=, from 64 KiB, with 1 MiB buffers: its calls in
  // many steps, interleaved with the algorithm's plain variants on the same slots); none: 0.
  const char* wire = nullptr;
};

constexpr size_t kWireChainBuffer = size_t{1} << 20;

std::string paramName(const ::testing::TestParamInfo<ChainParam>& info) {
  return std::string("w") + std::to_string(info.param.world) + "_" +
         tpcommAlgoName(info.param.algo) + (info.param.mixed ? "_mixed" : "_allreduce") +
         (info.param.wire ? std::string("_wire_") + info.param.wire : "");
}

// The chain's calls: log-uniform sizes from one element to 4M, every datatype, in place or not,
// offsets 0..7 elements, and a late rank before about one call in four.
std::vector<ChainCall> makeChain(const ChainParam& p, uint64_t seed, int ncalls) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const tpcommDataType_t dts[] = {tpcommFloat32, tpcommFloat16, tpcommBfloat16};
  const size_t hiddens[] = {64, 128, 1000, 2048, 4096, 5120, 7168, 8192};
  std::vector<ChainCall> calls(ncalls);
  for (int i = 0; i < ncalls; ++i) {
    ChainCall& c = calls[i];
    c.seed = rng();
    c.dt = dts[rng() % 3];
    const double r = u(rng);
    c.kind = !p.mixed   ? Kind::kAllReduce
             : r < 0.55 ? Kind::kAllReduce
             : r < 0.70 ? Kind::kFused
             : r < 0.85 ? Kind::kReduceScatter
                        : Kind::kAllGather;
    size_t n = static_cast<size_t>(std::exp(u(rng) * std::log(static_cast<double>(kMaxCount))));
    n = std::max<size_t>(n, 1);
    if (p.algo == tpcommAlgoOneShotCe) n = std::min<size_t>(n, size_t{1} << 18);  // launch queue
    switch (c.kind) {
      case Kind::kAllReduce:
        c.count = n;
        break;
      case Kind::kReduceScatter:
      case Kind::kAllGather:
        c.count = std::max<size_t>(n / p.world, 1);
        break;
      case Kind::kFused:
        c.hidden = hiddens[rng() % 8];
        c.tokens = std::clamp<size_t>(n / c.hidden, 1, 300);
        c.count = c.tokens * c.hidden;
        break;
    }
    c.in_place = rng() % 2;
    c.offset = rng() % 8;
    if (rng() % 4 == 0) {
      c.late_rank = static_cast<int>(rng() % p.world);
      c.late_ns = 25000 + static_cast<unsigned>(rng() % 75001);
    }
  }
  return calls;
}

// Whether the communicator has a plan for the call (a forced algorithm may have none).
bool planned(tpcommComm_t comm, const ChainCall& c) {
  tpcommCallInfo_t info{};
  tpcommResult_t r = tpcommSuccess;
  switch (c.kind) {
    case Kind::kAllReduce:
      r = tpcommCommExplain(comm, c.count, c.dt, &info);
      break;
    case Kind::kReduceScatter:
      r = tpcommCommExplainCollective(comm, tpcommCollReduceScatter, c.count, c.dt, &info);
      break;
    case Kind::kAllGather:
      r = tpcommCommExplainCollective(comm, tpcommCollAllGather, c.count, c.dt, &info);
      break;
    case Kind::kFused:
      r = tpcommCommExplainAddRmsNorm(comm, c.tokens, c.hidden, c.dt, nullptr, &info);
      break;
  }
  return r == tpcommSuccess && info.variant != tpcommVariantNone;
}

// Uploads rank r's inputs of call c into rc (allocating it).
::testing::AssertionResult prepare(const ChainCall& c, int world, int r, RankCall* rc) {
  size_t n[5];
  sectionElems(c, world, n);
  const size_t es = elemSize(c.dt);
  size_t total = 0, at[5];
  for (int s = 0; s < 5; ++s) {
    at[s] = total;
    total += (n[s] * es + c.offset * es + 511) / 256 * 256;
  }
  if (cudaMalloc(&rc->base, total) != cudaSuccess)
    return ::testing::AssertionFailure() << "cudaMalloc of " << total << " bytes";
  cudaMemset(rc->base, 0xCD, total);  // outputs start as garbage that no reference equals
  for (int s = 0; s < 5; ++s) rc->sec[s] = rc->base + at[s] + c.offset * es;
  const uint64_t rank_seed = c.seed * 1000003ull + static_cast<uint64_t>(r) * 7919ull;
  switch (c.kind) {
    case Kind::kAllReduce:
    case Kind::kReduceScatter:
    case Kind::kFused:
      fillInts(c.dt, n[0], rank_seed, &rc->in);
      cudaMemcpy(rc->sec[0], rc->in.data(), rc->in.size(), cudaMemcpyHostToDevice);
      break;
    case Kind::kAllGather:
      fillInts(c.dt, c.count, rank_seed, &rc->in);
      // In place: the input is this rank's run of the output.
      cudaMemcpy(c.in_place ? rc->sec[1] + r * c.count * es : rc->sec[0], rc->in.data(),
                 rc->in.size(), cudaMemcpyHostToDevice);
      break;
  }
  if (c.kind == Kind::kFused) {
    fillInts(c.dt, c.count, c.seed + 17, &rc->res);  // the residual is the same on every rank
    cudaMemcpy(rc->sec[2], rc->res.data(), rc->res.size(), cudaMemcpyHostToDevice);
    rc->gamma = makeInput(c.dt, c.hidden, c.seed + 18, 0);
    cudaMemcpy(rc->sec[4], rc->gamma.data(), rc->gamma.size(), cudaMemcpyHostToDevice);
  }
  return ::testing::AssertionSuccess();
}

tpcommResult_t issue(const ChainCall& c, int r, const RankCall& rc, tpcommComm_t comm,
                     cudaStream_t s) {
  const size_t es = elemSize(c.dt);
  switch (c.kind) {
    case Kind::kAllReduce:
      return tpcommAllReduce(rc.sec[0], c.in_place ? rc.sec[0] : rc.sec[1], c.count, c.dt,
                             tpcommSum, comm, s);
    case Kind::kReduceScatter:
      return tpcommReduceScatter(rc.sec[0], c.in_place ? rc.sec[0] + r * c.count * es : rc.sec[1],
                                 c.count, c.dt, comm, s);
    case Kind::kAllGather:
      return tpcommAllGather(c.in_place ? rc.sec[1] + r * c.count * es : rc.sec[0], rc.sec[1],
                             c.count, c.dt, comm, s);
    case Kind::kFused: {
      tpcommRmsNormParams_t ep = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
      return tpcommAllReduceAddRmsNorm(rc.sec[0], rc.sec[2], c.in_place ? rc.sec[2] : rc.sec[3],
                                       c.in_place ? rc.sec[0] : rc.sec[1], rc.sec[4], c.tokens,
                                       c.hidden, c.dt, &ep, comm, s);
    }
  }
  return tpcommInternalError;
}

std::vector<uint8_t> download(const void* p, size_t bytes) {
  std::vector<uint8_t> v(bytes);
  cudaMemcpy(v.data(), p, bytes, cudaMemcpyDeviceToHost);
  return v;
}

// Checks every rank's outputs of call c against the exact reference; "" if all are right.
std::string check(const ChainCall& c, const Group& g, const std::vector<RankCall>& rcs) {
  const int world = g.world;
  const size_t es = elemSize(c.dt);
  std::string bad;
  auto note = [&](int r, const char* what, size_t wrong, size_t n) {
    if (wrong)
      bad += " rank " + std::to_string(r) + " " + what + ": " + std::to_string(wrong) + "/" +
             std::to_string(n) + " wrong;";
  };
  std::vector<uint8_t> first_norm;
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g.devs[r]);
    const RankCall& rc = rcs[r];
    if (c.kind == Kind::kFused) {
      std::vector<float> ar(c.count);
      for (size_t i = 0; i < c.count; ++i) {
        double sum = 0;
        for (int q = 0; q < world; ++q) sum += toDouble(c.dt, rcs[q].in.data() + i * es);
        ar[i] = static_cast<float>(sum);
      }
      const RmsNormCase rcase{c.dt, c.tokens, c.hidden, 1e-6f, false, 0.f};
      const RmsNormExpected want = rmsNormReference(rcase, ar, rc.res, rc.gamma);
      const auto res_out = download(c.in_place ? rc.sec[2] : rc.sec[3], c.count * es);
      const auto norm = download(c.in_place ? rc.sec[0] : rc.sec[1], c.count * es);
      size_t wrong_res = 0, wrong_norm = 0;
      for (size_t i = 0; i < c.count; ++i) {
        wrong_res += memcmp(res_out.data() + i * es, want.residual_out.data() + i * es, es) != 0;
        wrong_norm += !normClose(rcase, want.norm[i], norm.data() + i * es);
      }
      note(r, "residual", wrong_res, c.count);
      note(r, "norm", wrong_norm, c.count);
      if (r == 0) first_norm = norm;
      if (r > 0 && norm != first_norm) bad += " rank " + std::to_string(r) + " norm differs;";
      continue;
    }
    size_t n = 0;
    std::vector<uint8_t> want;
    const void* out = nullptr;
    switch (c.kind) {
      case Kind::kAllReduce: {
        n = c.count;
        out = c.in_place ? rc.sec[0] : rc.sec[1];
        want.resize(n * es);
        // Over a quantized wire: the host emulation's bits (tests/support/wire_reference.h).
        WireForm form = WireForm::kPull;
        const WireCodec codec = wireCodecOfVariant(c.plan.substr(0, c.plan.find('/')), &form);
        if (codec != WireCodec::kNone) {
          std::vector<std::vector<uint8_t>> ins;
          for (int q = 0; q < world; ++q) ins.push_back(rcs[q].in);
          const std::vector<float> w =
              emulateWire(codec, c.dt, n, world, kWireChainBuffer, ins, nullptr, form);
          for (size_t i = 0; i < n; ++i) fromDouble(c.dt, w[i], want.data() + i * es);
          break;
        }
        for (size_t i = 0; i < n; ++i) {
          double sum = 0;
          for (int q = 0; q < world; ++q) sum += toDouble(c.dt, rcs[q].in.data() + i * es);
          fromDouble(c.dt, sum, want.data() + i * es);
        }
        break;
      }
      case Kind::kReduceScatter:
        n = c.count;
        out = c.in_place ? rc.sec[0] + r * n * es : rc.sec[1];
        want.resize(n * es);
        for (size_t i = 0; i < n; ++i) {
          double sum = 0;
          for (int q = 0; q < world; ++q)
            sum += toDouble(c.dt, rcs[q].in.data() + (r * n + i) * es);
          fromDouble(c.dt, sum, want.data() + i * es);
        }
        break;
      case Kind::kAllGather:
        n = c.count * world;
        out = rc.sec[1];
        for (int q = 0; q < world; ++q) want.insert(want.end(), rcs[q].in.begin(), rcs[q].in.end());
        break;
      case Kind::kFused:
        break;
    }
    const auto got = download(out, n * es);
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i)
      wrong += memcmp(got.data() + i * es, want.data() + i * es, es) != 0;
    note(r, "output", wrong, n);
  }
  return bad;
}

std::string describe(const ChainCall& c, int i) {
  char buf[256];
  snprintf(buf, sizeof(buf), "#%-2d %-5s %s count=%zu", i, kindName(c.kind), dtypeName(c.dt),
           c.count);
  std::string s = buf;
  if (c.kind == Kind::kFused)
    s += " (T=" + std::to_string(c.tokens) + " H=" + std::to_string(c.hidden) + ")";
  s += c.in_place ? " in-place" : " out-of-place";
  s += " off=" + std::to_string(c.offset);
  if (c.late_rank >= 0)
    s += " late=rank" + std::to_string(c.late_rank) + "/" + std::to_string(c.late_ns / 1000) + "us";
  s += c.skipped ? "  [skipped: no plan]" : "  -> " + c.plan;
  return s;
}

// Runs the chain on a fresh group; returns "" or what went wrong (the chain's table included).
// Which variants a chain ran, each with its count (rank 0's: the ranks' agree, or the chain
// failed): evidence that a chain reached the variants it is meant to mix.
std::string variantMix(const std::vector<ChainCall>& calls) {
  std::map<std::string, int> n;
  for (const ChainCall& c : calls)
    if (!c.skipped) ++n[c.plan.substr(0, c.plan.find('/'))];
  std::string out;
  for (const auto& [name, k] : n)
    out += (out.empty() ? "" : ", ") + name + " x" + std::to_string(k);
  return out;
}

std::string runChain(const ChainParam& p, uint64_t seed, int ncalls) {
  tpcommConfig_t cfg = configFor(p.algo, 0, 4000);
  const std::string wire_knobs =
      p.wire ? std::string("wire=") + p.wire + ",wire_min_bytes=65536" : std::string();
  if (p.wire) {
    cfg.bufferBytes = kWireChainBuffer;
    cfg.launchKnobs = wire_knobs.c_str();
  }
  std::string err;
  auto g = makeGroup(p.world, &cfg, 0, &err);
  if (!g) return "group: " + err;
  std::vector<ChainCall> calls = makeChain(p, seed, ncalls);
  std::vector<std::vector<RankCall>> mem(ncalls, std::vector<RankCall>(p.world));
  std::string failure;
  for (int i = 0; i < ncalls && failure.empty(); ++i) {
    ChainCall& c = calls[i];
    if (!planned(g->comms[0], c)) {
      c.skipped = true;
      continue;
    }
    for (int r = 0; r < p.world; ++r) {
      cudaSetDevice(g->devs[r]);
      const auto ok = prepare(c, p.world, r, &mem[i][r]);
      if (!ok) return ok.message();
    }
    for (int r = 0; r < p.world; ++r) {  // uploads and memsets on the legacy stream: finish them
      cudaSetDevice(g->devs[r]);
      cudaDeviceSynchronize();
    }
  }
  // The chain itself: nothing synchronises until its end.
  for (int i = 0; i < ncalls && failure.empty(); ++i) {
    ChainCall& c = calls[i];
    if (c.skipped) continue;
    GroupScope group;
    for (int r = 0; r < p.world; ++r) {
      cudaSetDevice(g->devs[r]);
      if (c.late_rank == r) launchSpinFor(c.late_ns, g->streams[r]);
      const tpcommResult_t res = issue(c, r, mem[i][r], g->comms[r], g->streams[r]);
      if (res != tpcommSuccess) {
        failure = "call " + std::to_string(i) + " rank " + std::to_string(r) + ": " +
                  tpcommGetErrorString(res) + ": " + tpcommGetLastError();
        break;
      }
      tpcommCallInfo_t info{};
      tpcommCommGetLastCall(g->comms[r], &info);
      const std::string ran =
          std::string(tpcommVariantName(info.variant)) + "/" + std::to_string(info.blocks) + "b";
      if (r == 0)
        c.plan = ran;
      else if (ran != c.plan.substr(0, ran.size()))
        c.plan += " rank" + std::to_string(r) + "=" + ran;
    }
  }
  std::string async;
  for (int r = 0; r < p.world; ++r) {
    cudaSetDevice(g->devs[r]);
    const cudaError_t e = cudaStreamSynchronize(g->streams[r]);
    if (e != cudaSuccess)
      async += " rank " + std::to_string(r) + ": " + cudaGetErrorString(e) + ";";
    tpcommResult_t a = tpcommSuccess;
    tpcommCommGetAsyncError(g->comms[r], &a);
    if (a != tpcommSuccess)
      async += " rank " + std::to_string(r) + ": " + tpcommGetLastError() + ";";
  }
  std::string wrong;
  if (failure.empty() && async.empty()) {
    for (int i = 0; i < ncalls; ++i) {
      if (calls[i].skipped) continue;
      const std::string bad = check(calls[i], *g, mem[i]);
      if (!bad.empty()) wrong += "call " + std::to_string(i) + ":" + bad + "\n";
    }
  }
  for (auto& per_call : mem)
    for (RankCall& rc : per_call) cudaFree(rc.base);
  if (failure.empty() && async.empty() && wrong.empty()) {
    printf("[ chain    ] w%d %s seed %llu: %s\n", p.world, tpcommAlgoName(p.algo),
           static_cast<unsigned long long>(seed), variantMix(calls).c_str());
    return "";
  }
  std::string table;
  for (int i = 0; i < ncalls; ++i) table += "  " + describe(calls[i], i) + "\n";
  return "seed " + std::to_string(seed) + ": " + failure +
         (async.empty() ? "" : " async:" + async) + "\n" + wrong + table;
}

class LateRankChain : public ::testing::TestWithParam<ChainParam> {};

// TPCOMM_CHAIN_SEEDS chains of 24 calls each (default 2), each on a fresh group.
TEST_P(LateRankChain, NoDeadlockNoWrongBits) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const char* env = getenv("TPCOMM_CHAIN_SEEDS");
  const int seeds = env ? std::max(atoi(env), 1) : 2;
  const ChainParam& p = GetParam();
  for (int s = 0; s < seeds; ++s) {
    const uint64_t seed =
        1000u * static_cast<uint64_t>(p.world) + 17u * p.algo + s + (p.mixed ? 500 : 0);
    const std::string bad = runChain(p, seed, 24);
    ASSERT_TRUE(bad.empty()) << paramName(::testing::TestParamInfo<ChainParam>(p, 0)) << " " << bad;
  }
}

std::vector<ChainParam> chainParams() {
  std::vector<ChainParam> out;
  const int algos[] = {tpcommAlgoAuto,        tpcommAlgoOneShot,     tpcommAlgoTwoShot,
                       tpcommAlgoIsland,      tpcommAlgoOneShotPull, tpcommAlgoTwoShotPull,
                       tpcommAlgoIslandPull,  tpcommAlgoOneShotCe,   tpcommAlgoHostOneShot,
                       tpcommAlgoHostTwoShot, tpcommAlgoHostBulk};
  for (int mixed = 0; mixed < 2; ++mixed)
    for (int w = 2; w <= 8; ++w)
      for (int a : algos) {
        const bool island = a == tpcommAlgoIsland || a == tpcommAlgoIslandPull;
        if (island && (w < 4 || w % 2)) continue;
        out.push_back({w, a, mixed == 1});
      }
  // The quantized wire, opted in: its calls from 64 KiB interleaved with the plain pull ones.
  for (int w = 2; w <= 8; ++w) out.push_back({w, tpcommAlgoTwoShotPull, true, "int8"});
  for (int w : {3, 8}) out.push_back({w, tpcommAlgoTwoShotPull, true, "fp8_e5m2"});
  for (int w : {4}) out.push_back({w, tpcommAlgoTwoShotPull, true, "int4"});
  // Its push and host forms (forced twoshot, host_twoshot): the push form's entries share the push
  // slots with the plain two-shot, one-shot and halves, the host form's outboxes host_bulk's.
  for (int w : {2, 5, 8}) out.push_back({w, tpcommAlgoTwoShot, true, "int8"});
  for (int w : {4}) out.push_back({w, tpcommAlgoTwoShot, true, "fp8"});
  for (int w : {3}) out.push_back({w, tpcommAlgoTwoShot, true, "int4"});
  for (int w : {2, 4}) out.push_back({w, tpcommAlgoHostTwoShot, true, "int8"});
  for (int w : {8}) out.push_back({w, tpcommAlgoHostTwoShot, true, "fp8_e5m2"});
  // The same small buffers without a codec (wire=none): what the chains above run besides it.
  for (int w : {3}) out.push_back({w, tpcommAlgoTwoShot, true, "none"});
  for (int w : {2, 8}) out.push_back({w, tpcommAlgoHostTwoShot, true, "none"});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Chain, LateRankChain, ::testing::ValuesIn(chainParams()), paramName);

// The soak: TPCOMM_SOAK_CALLS (default 3000) all-reduces under auto at `world` ranks, sizes
// switching among the ones that take every one-shot and two-shot variant, a late rank (5-60 us)
// before one call in four, no host sync; every output compared on the GPU with its size's
// reference-checked first result. Prints the calls per second.
void soak(int world) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const char* env = getenv("TPCOMM_SOAK_CALLS");
  const long calls = env ? std::max(atol(env), 1L) : 3000;
  const tpcommConfig_t cfg = configFor(tpcommAlgoAuto, 0, 5000);
  std::string err;
  auto g = makeGroup(world, &cfg, 0, &err);
  ASSERT_TRUE(g) << err;
  const size_t counts[] = {1, 7, 1000, 4096, 7168, 16385, 65536, 262147, 1048576};
  const tpcommDataType_t dts[] = {tpcommBfloat16, tpcommFloat32};
  constexpr int kSizes = 9, kKinds = kSizes * 2;
  // Per rank and kind: input, output, expected output.
  std::vector<std::vector<char*>> in(world, std::vector<char*>(kKinds)),
      out(world, std::vector<char*>(kKinds)), want(world, std::vector<char*>(kKinds));
  std::vector<unsigned long long*> bad(world);
  for (int k = 0; k < kKinds; ++k) {
    const size_t n = counts[k % kSizes];
    const tpcommDataType_t dt = dts[k / kSizes];
    const size_t bytes = n * elemSize(dt);
    std::vector<std::vector<uint8_t>> host(world);
    for (int r = 0; r < world; ++r) {
      cudaSetDevice(g->devs[r]);
      fillInts(dt, n, 31u * k + r, &host[r]);
      ASSERT_EQ(cudaMalloc(&in[r][k], bytes), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&out[r][k], bytes), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&want[r][k], bytes), cudaSuccess);
      cudaMemcpy(in[r][k], host[r].data(), bytes, cudaMemcpyHostToDevice);
    }
    {
      GroupScope group;
      for (int r = 0; r < world; ++r)
        ASSERT_EQ(
            tpcommAllReduce(in[r][k], want[r][k], n, dt, tpcommSum, g->comms[r], g->streams[r]),
            tpcommSuccess);
    }
    std::vector<uint8_t> ref(bytes);
    for (size_t i = 0; i < n; ++i) {
      double sum = 0;
      for (int r = 0; r < world; ++r) sum += toDouble(dt, host[r].data() + i * elemSize(dt));
      fromDouble(dt, sum, ref.data() + i * elemSize(dt));
    }
    for (int r = 0; r < world; ++r) {
      ASSERT_TRUE(drained(*g, r));
      ASSERT_EQ(download(want[r][k], bytes), ref) << "size " << n << " rank " << r;
    }
  }
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    ASSERT_EQ(cudaMalloc(&bad[r], sizeof(unsigned long long)), cudaSuccess);
    cudaMemset(bad[r], 0, sizeof(unsigned long long));
    cudaDeviceSynchronize();
  }
  std::mt19937_64 rng(world);
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < calls; ++i) {
    const int k = static_cast<int>(rng() % kKinds);
    const size_t n = counts[k % kSizes];
    const tpcommDataType_t dt = dts[k / kSizes];
    const int late = rng() % 4 == 0 ? static_cast<int>(rng() % world) : -1;
    GroupScope group;
    for (int r = 0; r < world; ++r) {
      cudaSetDevice(g->devs[r]);
      if (r == late) launchSpinFor(5000 + static_cast<unsigned>(rng() % 55000), g->streams[r]);
      ASSERT_EQ(tpcommAllReduce(in[r][k], out[r][k], n, dt, tpcommSum, g->comms[r], g->streams[r]),
                tpcommSuccess)
          << "call " << i << ": " << tpcommGetLastError();
      launchCompare(out[r][k], want[r][k], n * elemSize(dt), bad[r], g->streams[r]);
    }
    if (i % 100000 == 99999)
      printf("[soak     ] world %d: %ld calls issued, %.1f s\n", world, i + 1,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  for (int r = 0; r < world; ++r) {
    EXPECT_TRUE(drained(*g, r));
    unsigned long long b = 0;
    cudaMemcpy(&b, bad[r], sizeof(b), cudaMemcpyDeviceToHost);
    EXPECT_EQ(b, 0ull) << "rank " << r << ": bytes differing from the reference";
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printf(
      "[soak     ] world %d: %ld calls per rank in %.1f s: %.0f calls/s (ranks sharing one GPU: "
      "%s)\n",
      world, calls, s, calls / s, g->distinctGpus() ? "no" : "yes");
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    cudaFree(bad[r]);
    for (int k = 0; k < kKinds; ++k) {
      cudaFree(in[r][k]);
      cudaFree(out[r][k]);
      cudaFree(want[r][k]);
    }
  }
}

TEST(Soak, World2) {
  soak(2);
}
TEST(Soak, World4) {
  soak(4);
}
TEST(Soak, World8) {
  soak(8);
}

}  // namespace
}  // namespace tpcomm::test
