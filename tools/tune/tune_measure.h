// `tpcomm tune`'s measuring: every candidate (tpcomm's algorithms, each forced through
// config.algo, and NCCL itself) on the actual GPUs, in-process ranks, CUDA-graph mode, over a
// size sweep, each result checked against a host reference. Needs GPUs; see tune_rules.h for the
// decisions made from the numbers.
#pragma once

#include <string>
#include <vector>

#include "bench/timing.h"
#include "plan/tuning_table.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm::cli {

struct MeasureConfig {
  std::vector<int> devlist;  // rank r on GPU devlist[r] (distinct GPUs)
  tpcommDataType_t dtype = tpcommBfloat16;
  std::vector<size_t> sizes;  // bytes, ascending
  int warmup = 5;
  int iters = 50;  // calls per captured graph
  int reps = 9;    // graph replays; the median is kept
  bool check = true;
};

struct MeasureResult {
  std::vector<TuningSample> samples;  // only correct results
  std::vector<int> candidates;        // measured at one size at least, in column order
  std::vector<std::string> skipped;   // "host_oneshot: why" for candidates never measured
  std::vector<std::string> failures;  // per-size failures and wrong results, with the reason
  long wrong = 0;                     // results outside tolerance (a bug: reported, exit 1)
};

// The candidates tune tries, in column order: every tpcommAlgo_t this library has (oneshot,
// twoshot, ..., the pull and copy-engine variants where built), then NCCL (candidatesFor). Those
// that cannot run here are skipped with the library's reason.
std::vector<int> tuneCandidates();

// One communicator per rank of devlist, made with cfg (tpcommCommInitAll); "" or why not (*comms
// then empty). tune_fused.cc makes its forms' communicators this way too.
std::string createComms(const std::vector<int>& devlist, const tpcommConfig_t& cfg,
                        std::vector<tpcommComm_t>* comms);

// An error a tpcomm kernel of these communicators reported after its call returned (a peer that
// never answered), as "asynchronous error: ..."; "" where none did.
std::string asyncError(const std::vector<tpcommComm_t>& comms);

// Every rank's buffers (rank r on devlist[r], max_bytes each) and its input, uploaded and kept on
// the host for the results' check (the same inputs for every measurement: tune_wire.cc's too).
std::string setupInputs(const std::vector<int>& devlist, tpcommDataType_t dtype, size_t max_bytes,
                        std::vector<timing::Rank>* ranks,
                        std::vector<std::vector<uint8_t>>* inputs);

// All ones into every rank's output (NaN in every datatype, so an output never written cannot pass
// a check); "" or the CUDA error.
std::string clearOutputs(std::vector<timing::Rank>& ranks, size_t bytes);

// Measures every candidate at every size; progress on stderr. Returns "" or why the measurement
// as a whole could not run (buffers could not be allocated, a CUDA error left the GPUs unusable).
std::string measureAll(const MeasureConfig& config, MeasureResult* out);

}  // namespace tpcomm::cli
