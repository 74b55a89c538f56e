// A measured size table for this machine, written by `tpcomm tune` and read by the policy in place
// of the built-in defaults. The file (format in docs/TOPOLOGY.md):
//   {"tpcomm_tuning": 1, "topology_key": "8gpu-...", "fabric": "pcie",
//    "tables": [{"world": 8, "rules": [{"max_bytes": 65536, "algo": "oneshot"},
//                                      {"max_bytes": "inf", "algo": "nccl"}],
//                "fused_twoshot_rows": 48, "fused_unfused_below": 4,      (both optional)
//                "wire_from": {"int8": 4194304, "int4": "inf"}}],         (optional)
//    "measured": {...}}                                     ("measured" is optional, kept as is)
// wire_from: per codec of the quantized wire (int8, int4, fp8, fp8_e5m2: kernels/layout/
// wire_codec.h), the bytes from which that codec's all-reduce measured faster than the best
// full-precision candidate at every larger measured size, or "inf" (it never did); a codec not
// named was not measured. It only narrows the user's opt-in (plan/wire_plan.cc): below it the
// codec is not taken.
// A table decides which code runs, so it is validated completely and never trusted in part: a
// corrupt file, one from another machine or driver (topology key), an unknown algorithm or a rule
// list that is not strictly increasing or does not cover every size makes the whole file ignored,
// with a warning that says why; the policy then uses its defaults (so does an unknown codec name
// in wire_from, or a byte count there that is not a positive integer or "inf").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/json.h"
#include "kernels/layout/wire_codec.h"  // kWireCodecs
#include "plan/policy.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

constexpr int kTuningFormatVersion = 1;

struct WorldTable {
  int world = 0;
  SizeTable rules;  // max_bytes strictly increasing, the last SIZE_MAX
  // The fused call's (tpcommAllReduceAddRmsNorm) measured crossover: calls of this many rows or
  // more within one step of the fused one-shot take the fused two-shot (plan/knobs.h,
  // fused_twoshot_rows); SIZE_MAX ("inf"): the one-shot won at every row count measured; 0: not
  // measured (the planner's default).
  size_t fused_twoshot_rows = 0;
  // Fused calls of fewer rows run unfused: tpcomm tune measured the all-reduce + epilogue kernel
  // pair faster there than the fused form the planner picks; SIZE_MAX ("inf"): at every row count;
  // 0: none (or not measured).
  size_t fused_unfused_below = 0;
  // The quantized wire's measured crossover per codec (index: WireCodec, 0 unused): an opted-in
  // all-reduce of fewer bytes keeps the full-precision wire (plan/wire_plan.cc); SIZE_MAX
  // ("inf"): the codec measured slower at every size; 0: not measured.
  size_t wire_from[kWireCodecs] = {};  // by WireCodec; [0] (none) unused
};

struct TuningTable {
  std::string topology_key;
  Fabric fabric = Fabric::kNvlink;  // the fabric the measurements ran on
  std::vector<WorldTable> tables;   // one per world size, each world at most once
  json::Value measured;             // raw numbers from tpcomm tune (null when absent)
  std::string path;                 // where it was loaded from (for doctor and the log)

  // The rules for a world size, nullptr if the file has none.
  const SizeTable* tableFor(int world) const;
  // The whole entry of a world measured on `fabric`, nullptr if the file has none.
  const WorldTable* worldFor(int world, Fabric fabric) const;
  // The same, but nullptr unless the table was measured on `fabric` (a table measured with P2P
  // must not steer a communicator that runs through host memory, and the reverse).
  const SizeTable* tableFor(int world, Fabric fabric) const;
};

// Checks everything listed above (except the key, which parse/load compare); false with a reason.
bool validateTuningTable(const TuningTable& table, std::string* why);

// Parses and validates file text for the machine whose topology key is expected_key.
bool parseTuningTable(const std::string& text, const std::string& expected_key, TuningTable* out,
                      std::string* why);
std::string tuningTableText(const TuningTable& table);  // SIZE_MAX is written as "inf"

enum class TuningLoad {
  kLoaded,    // *out is valid
  kMissing,   // no file: normal before `tpcomm tune` ran (logged at INFO)
  kRejected,  // a file exists but is not used: invalid, foreign, too large, or planted (a link,
              // another user's, writable by others: common/trusted_file.h); WARN with the reason
};
TuningLoad loadTuningTable(const std::string& path, const std::string& expected_key,
                           TuningTable* out, std::string* why);

// Validates, then writes atomically (mode 0600), creating the folder (0700).
tpcommResult_t saveTuningTable(const std::string& path, const TuningTable& table);

// TPCOMM_TUNING_FILE when set, else <user cache folder>/tuning-<key>.json; "" when neither exists.
std::string defaultTuningPath(const std::string& topology_key);

// The algorithm a table picks for a call of `bytes` (the first rule with max_bytes >= bytes);
// -1 for an empty table.
int tableAlgoFor(const SizeTable& table, size_t bytes);

// One measurement by tpcomm tune: the time of one algorithm at one size and world.
struct TuningSample {
  int world = 0;
  size_t bytes = 0;
  int algo = 0;  // tpcommAlgo_t
  double us = 0;
};

// The rule "never slower than NCCL when a table exists", checked on the measurements the table was
// made from: at every (world, size) where NCCL was measured, the algorithm the table picks must
// have been measured too and be no slower than NCCL x (1 + tolerance). False with the first
// violation in *why. tpcomm tune calls it before saving a table.
bool tableNeverSlowerThanNccl(const TuningTable& table, const std::vector<TuningSample>& samples,
                              double tolerance, std::string* why);

}  // namespace tpcomm
