// tpcomm-bench: one process drives every rank (one stream per rank), like nccl-tests' -g mode;
// the all-reduce by default, reduce-scatter or all-gather with --collective.
// Each backend (tpcomm auto / forced algorithms / NCCL) is timed the same way: eager (calls
// enqueued back to back) and CUDA graph (`iters` calls captured per rank, replayed), median of
// `reps` repetitions, on the same buffers, in the same run.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "bench/bench_plot.h"
#include "bench/bench_report.h"
#include "bench/cuda_check.h"
#include "bench/knob_sweep.h"
#include "bench/timing.h"
#include "common/env.h"
#include "support/host_data.h"
#include "transport/nccl_loader.h"

namespace tpcomm::bench {
namespace {

#define CK(call) TPCOMM_TOOL_CHECK("tpcomm-bench", call)

using timing::Rank;

struct Backend {
  std::string label;
  int algo = tpcommAlgoAuto;  // tpcommAlgoNccl: plain NCCL, not through tpcomm
  std::vector<tpcommComm_t> comms;
  std::vector<ncclComm_t> nccl;
};

const NcclApi* g_nccl = nullptr;

// The collective of the run (Args::collective): the whole message's count, split per rank.
enum class Coll { kAllReduce, kReduceScatter, kAllGather };
Coll g_coll = Coll::kAllReduce;

// Enqueues one call on every rank; count: the whole message's. Returns "" or the error.
std::string enqueueAll(Backend& b, std::vector<Rank>& ranks, size_t count, tpcommDataType_t dt) {
  const size_t part = count / ranks.size();
  if (b.algo == tpcommAlgoNccl) {
    const ncclDataType_t nt = static_cast<ncclDataType_t>(dt);
    g_nccl->groupStart();
    for (size_t r = 0; r < ranks.size(); ++r) {
      const Rank& k = ranks[r];
      if (g_coll == Coll::kAllReduce)
        g_nccl->allReduce(k.send, k.recv, count, nt, ncclSum, b.nccl[r], k.stream);
      else if (g_coll == Coll::kReduceScatter)
        g_nccl->reduceScatter(k.send, k.recv, part, nt, ncclSum, b.nccl[r], k.stream);
      else
        g_nccl->allGather(k.send, k.recv, part, nt, b.nccl[r], k.stream);
    }
    const ncclResult_t res = g_nccl->groupEnd();
    return res == ncclSuccess ? "" : g_nccl->getErrorString(res);
  }
  // One thread drives every rank: group the calls, since the policy may hand a size to NCCL,
  // whose first call needs every rank's call before any returns (a hang otherwise).
  std::string err;
  tpcommGroupStart();
  for (size_t r = 0; r < ranks.size() && err.empty(); ++r) {
    const Rank& k = ranks[r];
    const tpcommResult_t res =
        g_coll == Coll::kAllReduce
            ? tpcommAllReduce(k.send, k.recv, count, dt, tpcommSum, b.comms[r], k.stream)
        : g_coll == Coll::kReduceScatter
            ? tpcommReduceScatter(k.send, k.recv, part, dt, b.comms[r], k.stream)
            : tpcommAllGather(k.send, k.recv, part, dt, b.comms[r], k.stream);
    if (res != tpcommSuccess) err = tpcommGetLastError();
  }
  tpcommGroupEnd();
  return err;
}

// Checks every rank's output against the reference and, for the all-reduce and all-gather
// (whose outputs are the same on every rank), rank 0's bits; a quantized wire's against rank 0's
// only (its error is the codec's: the GPU tests check it).
long checkOutputs(std::vector<Rank>& ranks, const std::vector<std::vector<uint8_t>>& inputs,
                  size_t count, tpcommDataType_t dt, bool quantized) {
  const size_t es = test::elemSize(dt), world = ranks.size();
  const size_t part = count / world, bytes = (g_coll == Coll::kReduceScatter ? part : count) * es;
  std::vector<std::vector<uint8_t>> ins;
  long wrong = 0;
  std::vector<uint8_t> out0, out(bytes);
  for (size_t i = 0; i < world; ++i) {
    CK(cudaSetDevice(ranks[i].dev));
    CK(cudaMemcpy(out.data(), ranks[i].recv, bytes, cudaMemcpyDeviceToHost));
    if (g_coll == Coll::kAllGather) {  // every rank's first part, in rank order
      for (size_t p = 0; p < world; ++p)
        wrong += memcmp(out.data() + p * part * es, inputs[p].data(), part * es) != 0;
      continue;
    }
    const size_t first = g_coll == Coll::kReduceScatter ? i * part * es : 0;
    ins.clear();
    for (const std::vector<uint8_t>& in : inputs)
      ins.emplace_back(in.begin() + first, in.begin() + first + bytes);
    if (!quantized) {
      const std::vector<uint8_t> ref = test::reference(dt, bytes / es, ins);
      wrong += static_cast<long>(test::countWrong(dt, bytes / es, out.data(), ref.data(), ins));
    }
    if (g_coll == Coll::kReduceScatter) continue;
    if (i == 0)
      out0 = out;
    else if (memcmp(out.data(), out0.data(), bytes) != 0)
      wrong += 1;  // ranks disagree
  }
  return wrong;
}

// A CUDA failure leaves the GPUs' state unknown: the run stops, as CK does.
void exitOnCudaError(const std::string& why) {
  if (why.empty()) return;
  fprintf(stderr, "tpcomm-bench: %s\n", why.c_str());
  exit(1);
}

// One backend at one size in one mode, timed by the shared harness (bench/timing.h); the outputs
// are checked after the eager warmup and, in graph mode, after the replays.
Result measure(const Args& a, Backend& b, std::vector<Rank>& ranks,
               const std::vector<std::vector<uint8_t>>& inputs, size_t bytes, bool graph) {
  Result res;
  res.backend = b.label;
  res.mode = graph ? "graph" : "eager";
  res.bytes = bytes;
  res.count = bytes / test::elemSize(a.dtype);
  const timing::EnqueueAll enqueue = [&] { return enqueueAll(b, ranks, res.count, a.dtype); };
  std::string err;
  for (int i = 0; i < a.warmup + 1 && err.empty(); ++i) err = enqueue();
  exitOnCudaError(timing::syncAll(ranks));
  if (!err.empty()) {
    res.note = err;
    return res;
  }
  if (b.algo == tpcommAlgoNccl) {
    res.algo = "nccl";
  } else {
    tpcommCallInfo_t info;
    tpcommCommGetLastCall(b.comms[0], &info);
    res.algo = tpcommAlgoName(info.algo);
    if (info.blocks) res.algo += "/" + std::to_string(info.blocks) + "b";
  }
  const bool quantized = isWireBackend(b.label);
  if (a.check && !graph) res.wrong = checkOutputs(ranks, inputs, res.count, a.dtype, quantized);
  // The warmup above is done: one more eager call before timing, as the harness requires.
  const timing::Timing t = graph ? timing::timeInGraph(ranks, enqueue, 1, a.iters, a.reps)
                                 : timing::timeEager(ranks, enqueue, 1, a.iters, a.reps);
  if (t.cuda_failed) exitOnCudaError(t.error);
  if (!t.ok) {
    res.note = t.error;
    return res;
  }
  if (graph && a.check) res.wrong = checkOutputs(ranks, inputs, res.count, a.dtype, quantized);
  res.ok = true;
  res.median_us = t.median_us;
  res.min_us = t.min_us;
  res.max_us = t.max_us;
  return res;
}

tpcommComm_t* initTpcomm(Backend& b, const std::vector<int>& devlist, int algo, int max_blocks,
                         const char* knobs = nullptr) {
  tpcommConfig_t cfg = TPCOMM_CONFIG_INITIALIZER;
  cfg.algo = algo;
  cfg.maxBlocks = max_blocks;
  cfg.launchKnobs = knobs;
  // Forced algorithms never need the fallback; auto keeps it (the policy may pick NCCL).
  if (algo != tpcommAlgoAuto) cfg.ncclMode = tpcommNcclOff;
  b.comms.assign(devlist.size(), nullptr);
  if (tpcommCommInitAll(b.comms.data(), static_cast<int>(devlist.size()), devlist.data(), &cfg) !=
      tpcommSuccess) {
    fprintf(stderr, "tpcomm-bench: tpcommCommInitAll (%s) failed: %s\n", b.label.c_str(),
            tpcommGetLastError());
    exit(1);
  }
  return b.comms.data();
}

// The backends of --backends (NCCL skipped where it cannot run), then the --sweep-knobs
// variants, each with its communicators. False when NCCL was asked for and fails to initialise.
bool makeBackends(const Args& a, const std::vector<int>& devlist, bool shared,
                  std::vector<Backend>* backends) {
  for (const std::string& name : a.backends) {
    Backend b;
    b.label = name;
    BackendSpec spec;
    std::string why;
    parseBackend(name, &spec, &why);  // checked by parseArgs
    if (spec.algo == tpcommAlgoNccl) {
      std::string why;
      g_nccl = ncclApi(&why);
      if (!g_nccl || shared) {
        fprintf(stderr, "tpcomm-bench: skipping NCCL: %s\n",
                shared ? "ranks share a GPU" : why.c_str());
        continue;
      }
      b.algo = tpcommAlgoNccl;
      b.nccl.assign(devlist.size(), nullptr);
      if (g_nccl->commInitAll(b.nccl.data(), a.ranks, devlist.data()) != ncclSuccess) {
        fprintf(stderr, "tpcomm-bench: ncclCommInitAll failed\n");
        return false;
      }
    } else {
      b.algo = spec.algo;
      initTpcomm(b, devlist, b.algo, a.max_blocks,
                 spec.knobs.empty() ? nullptr : spec.knobs.c_str());
    }
    backends->push_back(std::move(b));
  }
  if (!a.sweep_knobs) return true;
  // One backend per launch-knob variant, its communicators created with those knobs.
  for (const KnobVariant& v : knobVariants(a.backends)) {
    Backend b;
    b.label = v.label;
    b.algo = v.algo;
    initTpcomm(b, devlist, v.algo, a.max_blocks, v.knobs.c_str());
    backends->push_back(std::move(b));
  }
  return true;
}

}  // namespace
}  // namespace tpcomm::bench

using namespace tpcomm;
using namespace tpcomm::bench;

int main(int argc, char** argv) {
  Args a;
  int code = 0;
  if (!parseArgs(argc, argv, &a, &code)) return code;
  g_coll = a.collective == "reduce_scatter" ? Coll::kReduceScatter
           : a.collective == "all_gather"   ? Coll::kAllGather
                                            : Coll::kAllReduce;
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
    fprintf(stderr, "tpcomm-bench: no CUDA device visible\n");
    return 1;
  }
  if (a.devices.empty())
    for (int i = 0; i < ngpu; ++i) a.devices.push_back(i);
  if (a.ranks == 0) a.ranks = static_cast<int>(a.devices.size());
  std::vector<int> devlist;
  for (int r = 0; r < a.ranks; ++r) devlist.push_back(a.devices[r % a.devices.size()]);
  const bool shared = a.ranks > static_cast<int>(a.devices.size());

  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, devlist[0]));
  const std::string machine = std::to_string(a.devices.size()) + "x " + prop.name;

  std::vector<Rank> ranks;
  exitOnCudaError(timing::setupRanks(devlist, a.max_bytes, &ranks));
  const size_t max_count = a.max_bytes / test::elemSize(a.dtype);
  std::vector<std::vector<uint8_t>> inputs;  // host copy of each rank's send buffer
  for (int r = 0; r < a.ranks; ++r) {
    inputs.push_back(test::makeInput(a.dtype, max_count, 1234, r));
    CK(cudaSetDevice(ranks[r].dev));
    CK(cudaMemcpy(ranks[r].send, inputs[r].data(), a.max_bytes, cudaMemcpyHostToDevice));
  }

  std::vector<Backend> backends;
  if (!makeBackends(a, devlist, shared, &backends)) return 1;
  std::vector<std::string> labels;
  for (const Backend& b : backends) labels.push_back(b.label);
  std::vector<size_t> sizes;
  for (size_t s = a.min_bytes; s <= a.max_bytes; s *= static_cast<size_t>(a.factor))
    sizes.push_back(s);
  std::vector<Result> results;
  size_t step = 0;
  const size_t total = sizes.size() * backends.size() * ((a.eager ? 1 : 0) + (a.graph ? 1 : 0));
  for (size_t bytes : sizes) {
    for (Backend& b : backends) {
      for (int m = 0; m < 2; ++m) {
        const bool graph = m == 1;
        if ((graph && !a.graph) || (!graph && !a.eager)) continue;
        Result r = measure(a, b, ranks, inputs, bytes, graph);
        ++step;
        fprintf(stderr, "[%3zu/%3zu] %9zu B %-12s %-5s %10.2f us %s%s\n", step, total, bytes,
                b.label.c_str(), r.mode.c_str(), r.median_us, r.algo.c_str(),
                r.ok ? (r.wrong > 0 ? "  WRONG" : "") : ("  n/a: " + r.note).c_str());
        results.push_back(r);
      }
    }
  }
  if (a.eager) printTable(a, a.ranks, "eager", results, labels);
  if (a.graph) printTable(a, a.ranks, "graph", results, labels);
  if (!a.json.empty() && !writeJson(a.json, a, a.ranks, machine, results))
    fprintf(stderr, "tpcomm-bench: cannot write %s\n", a.json.c_str());
  if (!a.plot.empty()) {
    const PlotInfo info{a.ranks, machine, shared, test::dtypeName(a.dtype), a.collective};
    std::string why;
    if (writePlot(a.plot, info, results, &why))
      fprintf(stderr, "tpcomm-bench: plot written to %s\n", a.plot.c_str());
    else
      fprintf(stderr, "tpcomm-bench: no plot: %s\n", why.c_str());
  }
  long wrong = 0;
  for (const Result& r : results) wrong += r.wrong > 0 ? r.wrong : 0;
  for (Backend& b : backends) {
    for (tpcommComm_t c : b.comms) tpcommCommDestroy(c);
    for (ncclComm_t c : b.nccl) g_nccl->commDestroy(c);
  }
  return wrong ? 1 : 0;
}
