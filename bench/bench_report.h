// tpcomm-bench output: an nccl-tests-style table per mode, and JSON.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_args.h"

namespace tpcomm::bench {

struct Result {
  std::string backend;  // "auto", "oneshot", "twoshot", "nccl", "oneshot/b8", ...
  std::string mode;     // "eager" or "graph"
  size_t bytes = 0;
  size_t count = 0;
  bool ok = false;  // measured (false: the backend cannot serve this size; see note)
  double median_us = 0, min_us = 0, max_us = 0;
  std::string algo;  // what ran (for auto: the policy's choice)
  long wrong = -1;   // elements outside tolerance (-1: not checked)
  std::string note;
};

void printTable(const Args& a, int ranks, const std::string& mode, const std::vector<Result>& rs,
                const std::vector<std::string>& backends);
bool writeJson(const std::string& path, const Args& a, int ranks, const std::string& machine,
               const std::vector<Result>& rs);

}  // namespace tpcomm::bench
