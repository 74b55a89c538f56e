// Command line of tpcomm-bench-fused (fused_bench.cc), apart from the bench so that the CPU tests
// check it: every value is parsed whole, and the token counts come back sorted and distinct (the
// bench sizes its buffers by the largest).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tpcomm::bench {

struct FusedArgs {
  int ranks = 2;
  size_t hidden = 7168;
  std::vector<size_t> tokens = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  bool fp8 = false;
  std::string json;  // write the rows here too; "" none
  int iters = 50;    // calls per captured graph
  int reps = 20;     // graph replays; the median is reported
};

// The most tokens and the widest rows the bench takes: bounds that keep the buffers' byte counts
// far from overflow (the library refuses what it cannot plan, with its own error).
constexpr size_t kFusedMaxTokens = size_t{1} << 20;
constexpr size_t kFusedMaxHidden = size_t{1} << 20;

// Parses argv into *a. --help prints the usage to stdout: false, *exit_code 0. A bad option or
// value prints what was wrong and the usage to stderr: false, *exit_code 2.
bool parseFusedArgs(int argc, char** argv, FusedArgs* a, int* exit_code);

}  // namespace tpcomm::bench
