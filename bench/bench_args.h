// Command line of tpcomm-bench.
#pragma once

#include <string>
#include <vector>

#include "tpcomm/tpcomm.h"

namespace tpcomm::bench {

struct Args {
  int ranks = 0;             // 0: one per visible GPU
  std::vector<int> devices;  // rank i on devices[i % size]; empty: 0..ngpu-1
  size_t min_bytes = 1024;
  size_t max_bytes = 64u << 20;
  int factor = 4;
  tpcommDataType_t dtype = tpcommBfloat16;
  bool eager = true;
  bool graph = true;
  std::vector<std::string> backends = {"auto", "oneshot", "twoshot", "nccl"};
  int iters = 50;  // calls per timed repetition (and per captured graph)
  int reps = 9;    // repetitions; the median is reported
  int warmup = 5;
  int max_blocks = 0;
  bool sweep_knobs = false;  // also time oneshot/twoshot over grid and batch variants
  bool check = true;         // verify each backend's output against the fp64 reference
  std::string json;          // write results here
  std::string plot;          // and draw them here (SVG: bench_plot.h)
  // allreduce, reduce_scatter or all_gather; bytes are the whole message (reduce-scatter's
  // input, all-gather's output), as nccl-tests reports them.
  std::string collective = "allreduce";
  // --wire int8,twoshot:fp8: each codec's quantized wire in a two-shot's form (the pull form
  // unless ALGO: names another), added to the backends (wireBackend); their check is the ranks'
  // agreement only.
  std::vector<std::string> wire;
};

// The backend of a --wire entry "[ALGO:]CODEC": ALGO@wire=CODEC+wire_min_bytes=0 (ALGO
// twoshot_pull where none is named).
std::string wireBackend(const std::string& entry);

// Whether a backend's label names a quantized wire (its outputs differ from the reference by
// the codec's error: the bench checks the ranks agree, the GPU tests check the values).
bool isWireBackend(const std::string& label);

// One --backends entry: an algorithm name, or nccl, optionally with launch knobs after '@' (as
// TPCOMM_KNOBS, items joined by '+': "oneshot_pull@pull_ll_bytes=0+lean=0"), so that one run
// times one algorithm under several knob sets side by side.
struct BackendSpec {
  int algo = tpcommAlgoAuto;  // tpcommAlgoNccl for nccl
  std::string knobs;          // "name=value,..." for tpcommConfig_t::launchKnobs; "" none
};
// False (why in *why) for an unknown name, knobs on nccl, or knobs the library would refuse.
bool parseBackend(const std::string& spec, BackendSpec* out, std::string* why);

// Parses argv; on --help or an error prints usage and returns false with *exit_code set.
bool parseArgs(int argc, char** argv, Args* a, int* exit_code);

}  // namespace tpcomm::bench
