// tpcomm-bench-fused's rows (fused_bench.cc), apart from the bench so that the CPU tests check
// them: a column whose calls failed shows "-" (JSON: null), never a time, and a refused fused
// call names no variant (the last call the communicator ran was another column's).
#pragma once

#include <cstddef>
#include <string>

namespace tpcomm::bench {

// One token count: the all-reduce, the pair (all-reduce, then the epilogue kernel), the fused call
// as planned, the fused call with a block per row; ok[k] false where those calls failed.
struct FusedRow {
  size_t tokens = 0;
  double us[4] = {0, 0, 0, 0};
  bool ok[4] = {false, false, false, false};
  const char* variant = nullptr;  // the planned fused call's; nullptr when it was refused
  int blocks = 0;
};

// The table's line, newline included.
std::string fusedRowText(const FusedRow& r);
// The row as one JSON object (no trailing comma).
std::string fusedRowJson(const FusedRow& r);

}  // namespace tpcomm::bench
