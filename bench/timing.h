// The one timing harness of tpcomm-bench (bench/tpcomm_bench.cc) and `tpcomm tune`
// (tools/tune/tune_measure.cc): one process drives every rank (one stream per GPU), each backend
// is warmed up eagerly, then either `iters` calls per rank are captured into one CUDA graph per
// rank and the graphs are replayed `reps` times (timeInGraph), or `iters` calls are enqueued
// eagerly `reps` times (timeEager); a repetition's time is the slowest rank's (CUDA events on
// each stream) / iters, and the median is reported. Header-only and backend-agnostic (the caller
// enqueues). Errors come back as strings: nothing here exits.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace tpcomm::timing {

struct Rank {
  int dev = 0;
  cudaStream_t stream = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
};

// "" or "what failed: CUDA's message".
inline std::string cudaWhy(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return "";
  cudaGetLastError();
  return std::string(what) + ": " + cudaGetErrorString(e);
}

#define TPCOMM_TIMING_CK(call)                                         \
  do {                                                                 \
    const std::string why_ = ::tpcomm::timing::cudaWhy((call), #call); \
    if (!why_.empty()) return why_;                                    \
  } while (0)

// A stream, events and send/receive buffers of `bytes` on each rank's device.
inline std::string setupRanks(const std::vector<int>& devlist, size_t bytes,
                              std::vector<Rank>* ranks) {
  ranks->assign(devlist.size(), Rank());
  for (size_t r = 0; r < devlist.size(); ++r) {
    Rank& k = (*ranks)[r];
    k.dev = devlist[r];
    TPCOMM_TIMING_CK(cudaSetDevice(k.dev));
    TPCOMM_TIMING_CK(cudaStreamCreateWithFlags(&k.stream, cudaStreamNonBlocking));
    TPCOMM_TIMING_CK(cudaEventCreate(&k.start));
    TPCOMM_TIMING_CK(cudaEventCreate(&k.stop));
    TPCOMM_TIMING_CK(cudaMalloc(&k.send, bytes));
    TPCOMM_TIMING_CK(cudaMalloc(&k.recv, bytes));
  }
  return "";
}

inline void freeRanks(std::vector<Rank>* ranks) {
  for (Rank& k : *ranks) {
    cudaSetDevice(k.dev);
    if (k.stream) cudaStreamSynchronize(k.stream);
    if (k.send) cudaFree(k.send);
    if (k.recv) cudaFree(k.recv);
    if (k.start) cudaEventDestroy(k.start);
    if (k.stop) cudaEventDestroy(k.stop);
    if (k.stream) cudaStreamDestroy(k.stream);
  }
  ranks->clear();
}

inline std::string syncAll(std::vector<Rank>& ranks) {
  for (Rank& r : ranks) {
    TPCOMM_TIMING_CK(cudaSetDevice(r.dev));
    TPCOMM_TIMING_CK(cudaStreamSynchronize(r.stream));
  }
  return "";
}

// Enqueues one all-reduce on every rank's stream; returns "" or why it could not.
using EnqueueAll = std::function<std::string()>;

struct Timing {
  bool ok = false;
  double median_us = 0, min_us = 0, max_us = 0;
  std::string error;         // the enqueue's or CUDA's message when !ok
  bool cuda_failed = false;  // a CUDA call failed: the process's GPU state may be unusable
};

namespace detail {

// Captures `iters` calls per rank into one graph per rank. Every capture is ended before any graph
// is instantiated: in global capture mode instantiation is refused while a stream still captures.
inline std::string capture(std::vector<Rank>& ranks, const EnqueueAll& enqueue, int iters,
                           std::vector<cudaGraphExec_t>* execs, std::string* enqueue_error) {
  for (size_t r = 0; r < ranks.size(); ++r) {
    cudaSetDevice(ranks[r].dev);
    const std::string e =
        cudaWhy(cudaStreamBeginCapture(ranks[r].stream, cudaStreamCaptureModeGlobal),
                "cudaStreamBeginCapture");
    if (e.empty()) continue;
    for (size_t q = 0; q < r; ++q) {  // no stream may be left capturing
      cudaGraph_t g = nullptr;
      cudaSetDevice(ranks[q].dev);
      if (cudaStreamEndCapture(ranks[q].stream, &g) == cudaSuccess && g) cudaGraphDestroy(g);
    }
    cudaGetLastError();
    return e;
  }
  for (int i = 0; i < iters && enqueue_error->empty(); ++i) *enqueue_error = enqueue();
  std::vector<cudaGraph_t> graphs(ranks.size(), nullptr);
  std::string err;
  for (size_t r = 0; r < ranks.size(); ++r) {
    cudaSetDevice(ranks[r].dev);
    const std::string e =
        cudaWhy(cudaStreamEndCapture(ranks[r].stream, &graphs[r]), "cudaStreamEndCapture");
    if (err.empty()) err = e;
  }
  execs->assign(ranks.size(), nullptr);
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (!graphs[r]) continue;
    cudaSetDevice(ranks[r].dev);
    if (err.empty() && enqueue_error->empty())
      err = cudaWhy(cudaGraphInstantiate(&(*execs)[r], graphs[r], 0), "cudaGraphInstantiate");
    cudaGraphDestroy(graphs[r]);
  }
  return err;
}

inline std::string launchAll(std::vector<Rank>& ranks, const std::vector<cudaGraphExec_t>& execs) {
  for (size_t r = 0; r < ranks.size(); ++r) {
    TPCOMM_TIMING_CK(cudaSetDevice(ranks[r].dev));
    TPCOMM_TIMING_CK(cudaGraphLaunch(execs[r], ranks[r].stream));
  }
  return "";
}

inline std::string recordAll(std::vector<Rank>& ranks, bool start) {
  for (Rank& r : ranks) {
    TPCOMM_TIMING_CK(cudaSetDevice(r.dev));
    TPCOMM_TIMING_CK(cudaEventRecord(start ? r.start : r.stop, r.stream));
  }
  return "";
}

// `reps` repetitions of `run` between events on every rank; each one's slowest rank / iters.
inline std::string repeat(std::vector<Rank>& ranks, const std::function<std::string()>& run,
                          int iters, int reps, std::vector<double>* us) {
  for (int rep = 0; rep < reps; ++rep) {
    std::string e = recordAll(ranks, true);
    if (e.empty()) e = run();
    if (e.empty()) e = recordAll(ranks, false);
    if (e.empty()) e = syncAll(ranks);
    if (!e.empty()) return e;
    float worst = 0;
    for (Rank& r : ranks) {
      float ms = 0;
      TPCOMM_TIMING_CK(cudaEventElapsedTime(&ms, r.start, r.stop));
      worst = std::max(worst, ms);
    }
    us->push_back(worst * 1e3 / iters);
  }
  return "";
}

// At least one eager call (warmup of them), then a sync; false with *t's error when one failed.
inline bool warmUp(std::vector<Rank>& ranks, const EnqueueAll& enqueue, int warmup, Timing* t) {
  for (int i = 0; i < std::max(warmup, 1) && t->error.empty(); ++i) t->error = enqueue();
  const std::string sync = syncAll(ranks);
  if (!sync.empty()) {
    t->error = sync;
    t->cuda_failed = true;
  }
  return t->error.empty();
}

// The timing of the repetitions (median, min, max), or the CUDA error that stopped them.
inline Timing finish(const std::string& err, std::vector<double> us, Timing t) {
  if (!err.empty()) {
    t.error = err;
    t.cuda_failed = true;
    return t;
  }
  std::sort(us.begin(), us.end());
  t.ok = !us.empty();
  if (!t.ok) return t;
  t.median_us = us[us.size() / 2];
  t.min_us = us.front();
  t.max_us = us.back();
  return t;
}

}  // namespace detail

// Times `enqueue` in CUDA-graph mode (see the top of the file). warmup eager calls come first;
// their failure (e.g. tpcommUnsupported at this size) is returned as !ok with cuda_failed false.
inline Timing timeInGraph(std::vector<Rank>& ranks, const EnqueueAll& enqueue, int warmup,
                          int iters, int reps) {
  Timing t;
  if (!detail::warmUp(ranks, enqueue, warmup, &t)) return t;
  std::vector<cudaGraphExec_t> execs;
  std::string enqueue_error;
  const std::string capture_error = detail::capture(ranks, enqueue, iters, &execs, &enqueue_error);
  auto destroyExecs = [&execs] {
    for (cudaGraphExec_t e : execs)
      if (e) cudaGraphExecDestroy(e);
  };
  if (!enqueue_error.empty() || !capture_error.empty()) {
    // This backend cannot be captured (at this size): its failure, not the GPUs'.
    destroyExecs();
    t.error = "capture: " + (enqueue_error.empty() ? capture_error : enqueue_error);
    return t;
  }
  std::string err = detail::launchAll(ranks, execs);  // warm the graphs
  if (err.empty()) err = syncAll(ranks);
  std::vector<double> us;
  if (err.empty())
    err = detail::repeat(
        ranks, [&] { return detail::launchAll(ranks, execs); }, iters, reps, &us);
  destroyExecs();
  return detail::finish(err, std::move(us), t);
}

// Times `enqueue` eagerly: warmup calls, then reps x iters calls back to back. An enqueue's error
// during the timed calls does not stop them (the warmup already showed the backend runs).
inline Timing timeEager(std::vector<Rank>& ranks, const EnqueueAll& enqueue, int warmup, int iters,
                        int reps) {
  Timing t;
  if (!detail::warmUp(ranks, enqueue, warmup, &t)) return t;
  std::vector<double> us;
  const std::string err = detail::repeat(
      ranks,
      [&] {
        for (int i = 0; i < iters; ++i) enqueue();
        return std::string();
      },
      iters, reps, &us);
  return detail::finish(err, std::move(us), t);
}

#undef TPCOMM_TIMING_CK

}  // namespace tpcomm::timing
