#include "tools/tune/tune_measure.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

#include "bench/timing.h"
#include "tests/support/host_data.h"
#include "tools/tune/tune_rules.h"
#include "transport/nccl_loader.h"

namespace tpcomm::cli {
namespace {

struct Backend {
  int algo = 0;
  std::vector<tpcommComm_t> comms;  // tpcomm candidates
  std::vector<ncclComm_t> nccl;     // the NCCL candidate
  const NcclApi* api = nullptr;
  tpcommResult_t last = tpcommSuccess;  // result of the last failed tpcomm call
  bool measured = false;                // at least one size succeeded
  bool dead = false;                    // skipped or broken: not tried again
};

std::string name(int algo) {
  return tpcommAlgoName(algo);
}

// Creates the backend; "" or why the candidate cannot be created here.
std::string create(Backend* b, const std::vector<int>& devlist) {
  const int n = static_cast<int>(devlist.size());
  if (b->algo == tpcommAlgoNccl) {
    std::string why;
    b->api = ncclApi(&why);
    if (!b->api) return why;
    b->nccl.assign(devlist.size(), nullptr);
    const ncclResult_t r = b->api->commInitAll(b->nccl.data(), n, devlist.data());
    if (r != ncclSuccess) {
      b->nccl.clear();
      return std::string("ncclCommInitAll failed: ") + b->api->getErrorString(r);
    }
    return "";
  }
  tpcommConfig_t cfg = TPCOMM_CONFIG_INITIALIZER;
  cfg.algo = b->algo;
  cfg.ncclMode = tpcommNcclOff;  // a forced algorithm never needs the fallback
  return createComms(devlist, cfg, &b->comms);
}

void destroy(Backend* b) {
  for (tpcommComm_t c : b->comms) tpcommCommDestroy(c);
  for (ncclComm_t c : b->nccl) b->api->commDestroy(c);
  b->comms.clear();
  b->nccl.clear();
}

std::string enqueue(Backend* b, std::vector<timing::Rank>& ranks, size_t count,
                    tpcommDataType_t dt) {
  if (b->algo == tpcommAlgoNccl) {
    b->api->groupStart();
    for (size_t r = 0; r < ranks.size(); ++r)
      b->api->allReduce(ranks[r].send, ranks[r].recv, count, static_cast<ncclDataType_t>(dt),
                        ncclSum, b->nccl[r], ranks[r].stream);
    const ncclResult_t res = b->api->groupEnd();
    return res == ncclSuccess ? "" : std::string("NCCL: ") + b->api->getErrorString(res);
  }
  // One thread drives every rank: grouped, as an NCCL fallback inside needs every rank's call.
  std::string err;
  tpcommGroupStart();
  for (size_t r = 0; r < ranks.size() && err.empty(); ++r) {
    const tpcommResult_t res = tpcommAllReduce(ranks[r].send, ranks[r].recv, count, dt, tpcommSum,
                                               b->comms[r], ranks[r].stream);
    if (res != tpcommSuccess) {
      b->last = res;
      err = tpcommGetLastError();
    }
  }
  tpcommGroupEnd();
  return err;
}

// Host copies of the inputs (each rank's first `count` elements) and their reference sum.
struct Expected {
  std::vector<std::vector<uint8_t>> inputs;
  std::vector<uint8_t> ref;
};

Expected expectedFor(const std::vector<std::vector<uint8_t>>& full, tpcommDataType_t dt,
                     size_t count) {
  Expected e;
  const size_t bytes = count * test::elemSize(dt);
  for (const auto& in : full) e.inputs.emplace_back(in.begin(), in.begin() + bytes);
  e.ref = test::reference(dt, count, e.inputs);
  return e;
}

// Elements of rank 0's output outside tolerance, plus one per rank whose bits differ from rank
// 0's (every rank must produce the same bits, so checking rank 0 against the reference is enough).
long countWrong(std::vector<timing::Rank>& ranks, const Expected& e, tpcommDataType_t dt,
                size_t count, std::string* cuda_error) {
  const size_t bytes = count * test::elemSize(dt);
  std::vector<uint8_t> out(bytes), out0;
  long wrong = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    cudaSetDevice(ranks[r].dev);
    *cuda_error =
        timing::cudaWhy(cudaMemcpy(out.data(), ranks[r].recv, bytes, cudaMemcpyDeviceToHost),
                        "cudaMemcpy (result check)");
    if (!cuda_error->empty()) return wrong;
    if (r == 0) {
      wrong += static_cast<long>(test::countWrong(dt, count, out.data(), e.ref.data(), e.inputs));
      out0.swap(out);
      out.resize(bytes);
    } else if (memcmp(out.data(), out0.data(), bytes) != 0) {
      ++wrong;
    }
  }
  return wrong;
}

void skip(int algo, const std::string& why, MeasureResult* out) {
  out->skipped.push_back(name(algo) + ": " + why);
  fprintf(stderr, "tpcomm tune: skipping %s: %s\n", name(algo).c_str(), why.c_str());
}

// Every candidate that can be created here; the others go to out->skipped.
std::vector<Backend> createBackends(const std::vector<int>& devlist, MeasureResult* out) {
  std::vector<Backend> backends;
  for (int algo : tuneCandidates()) {
    Backend b;
    b.algo = algo;
    const std::string why = create(&b, devlist);
    if (!why.empty()) {
      skip(algo, why, out);
      continue;
    }
    backends.push_back(std::move(b));
  }
  return backends;
}

struct Progress {
  size_t step, total;
};

// Prints one measurement and files it: a sample, a failure or wrong results.
void record(const MeasureConfig& cfg, size_t bytes, Progress p, const timing::Timing& t, long wrong,
            Backend* b, MeasureResult* out) {
  fprintf(stderr, "[%3zu/%3zu] %9zu B  %-12s %10.2f us%s%s\n", p.step, p.total, bytes,
          name(b->algo).c_str(), t.median_us, wrong ? "  WRONG RESULTS" : "",
          t.ok ? "" : ("  n/a: " + t.error).c_str());
  const std::string at = name(b->algo) + " at " + std::to_string(bytes) + " bytes: ";
  if (!t.ok) {
    out->failures.push_back(at + t.error);
  } else if (wrong) {
    out->wrong += wrong;
    out->failures.push_back(at + std::to_string(wrong) +
                            " wrong elements (not used; please report this)");
  } else {
    b->measured = true;
    out->samples.push_back({static_cast<int>(cfg.devlist.size()), bytes, b->algo, t.median_us});
  }
}

// Times one candidate at one size; "" or a CUDA error that ends the whole run.
std::string measureOne(const MeasureConfig& cfg, std::vector<timing::Rank>& ranks,
                       const Expected& expected, size_t bytes, Progress p, Backend* b,
                       MeasureResult* out) {
  const size_t count = bytes / test::elemSize(cfg.dtype);
  std::string err = clearOutputs(ranks, bytes);
  if (!err.empty()) return err;
  timing::Timing t = timing::timeInGraph(
      ranks, [&] { return enqueue(b, ranks, count, cfg.dtype); }, cfg.warmup, cfg.iters, cfg.reps);
  if (t.cuda_failed) return name(b->algo) + " at " + std::to_string(bytes) + " bytes: " + t.error;
  const std::string async = asyncError(b->comms);
  if (!async.empty()) {
    t.ok = false;
    t.error = async + " (the communicator is broken; " + name(b->algo) + " not tried again)";
    b->dead = true;
  }
  if (!t.ok && !b->measured && b->last == tpcommUnsupported) {
    // Cannot run here at all (e.g. the host transport on a P2P machine): say why once.
    skip(b->algo, t.error, out);
    b->dead = true;
    return "";
  }
  long wrong = 0;
  // NCCL is the baseline, not under test (it reduces in the datatype: its rounding differs).
  if (t.ok && cfg.check && b->algo != tpcommAlgoNccl) {
    wrong = countWrong(ranks, expected, cfg.dtype, count, &err);
    if (!err.empty()) return err;
  }
  record(cfg, bytes, p, t, wrong, b, out);
  return "";
}

}  // namespace

std::string clearOutputs(std::vector<timing::Rank>& ranks, size_t bytes) {
  for (timing::Rank& r : ranks) {
    const std::string e = timing::cudaWhy(cudaSetDevice(r.dev), "cudaSetDevice");
    if (!e.empty()) return e;
    // All ones: NaN in every datatype, so an output never written cannot pass the check.
    const std::string m = timing::cudaWhy(cudaMemset(r.recv, 0xFF, bytes), "cudaMemset");
    if (!m.empty()) return m;
  }
  return "";
}

std::string setupInputs(const std::vector<int>& devlist, tpcommDataType_t dtype, size_t max_bytes,
                        std::vector<timing::Rank>* ranks,
                        std::vector<std::vector<uint8_t>>* inputs) {
  const size_t es = test::elemSize(dtype);
  std::string err = timing::setupRanks(devlist, max_bytes, ranks);
  for (size_t r = 0; r < ranks->size() && err.empty(); ++r) {
    inputs->push_back(test::makeInput(dtype, max_bytes / es, 1234, static_cast<int>(r)));
    cudaSetDevice((*ranks)[r].dev);
    err = timing::cudaWhy(
        cudaMemcpy((*ranks)[r].send, inputs->back().data(), max_bytes, cudaMemcpyHostToDevice),
        "cudaMemcpy (inputs)");
  }
  return err;
}

std::string createComms(const std::vector<int>& devlist, const tpcommConfig_t& cfg,
                        std::vector<tpcommComm_t>* comms) {
  comms->assign(devlist.size(), nullptr);
  if (tpcommCommInitAll(comms->data(), static_cast<int>(devlist.size()), devlist.data(), &cfg) !=
      tpcommSuccess) {
    comms->clear();
    return std::string("tpcommCommInitAll: ") + tpcommGetLastError();
  }
  return "";
}

std::string asyncError(const std::vector<tpcommComm_t>& comms) {
  for (tpcommComm_t c : comms) {
    tpcommResult_t e = tpcommSuccess;
    if (tpcommCommGetAsyncError(c, &e) == tpcommSuccess && e != tpcommSuccess)
      return std::string("asynchronous error: ") + tpcommGetErrorString(e);
  }
  return "";
}

std::vector<int> tuneCandidates() {
  return candidatesFor(tpcommNumAlgos);
}

std::string measureAll(const MeasureConfig& cfg, MeasureResult* out) {
  if (cfg.sizes.empty() || cfg.devlist.size() < 2) return "nothing to measure";
  std::vector<timing::Rank> ranks;
  std::vector<std::vector<uint8_t>> inputs;
  std::string err = setupInputs(cfg.devlist, cfg.dtype, cfg.sizes.back(), &ranks, &inputs);
  if (!err.empty()) {
    timing::freeRanks(&ranks);
    return err;
  }
  std::vector<Backend> backends = createBackends(cfg.devlist, out);
  const size_t total = cfg.sizes.size() * backends.size();
  size_t step = 0;
  for (size_t bytes : cfg.sizes) {
    const size_t count = bytes / test::elemSize(cfg.dtype);
    const Expected expected = cfg.check ? expectedFor(inputs, cfg.dtype, count) : Expected();
    for (Backend& b : backends) {
      ++step;
      if (b.dead) continue;
      err = measureOne(cfg, ranks, expected, bytes, Progress{step, total}, &b, out);
      if (!err.empty()) break;
    }
    if (!err.empty()) break;
  }
  for (Backend& b : backends) {
    if (b.measured) out->candidates.push_back(b.algo);
    destroy(&b);
  }
  timing::freeRanks(&ranks);
  return err;
}

}  // namespace tpcomm::cli
