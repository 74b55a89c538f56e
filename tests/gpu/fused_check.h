// The fused call's checker for the GPU tests (test_fused.cc, test_fused_pull.cc): one
// tpcommAllReduceAddRmsNorm on every rank of a group against the host reference
// (tests/support/rmsnorm_reference.h): every rank's residual_out bit for bit, the norm within an
// ulp of its format, every rank's outputs bit-identical, and the variant that ran the one the
// planner named (tpcommCommExplainAddRmsNorm).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/gpu/harness.h"
#include "tests/support/rmsnorm_reference.h"

namespace tpcomm::test {

struct FusedCase {
  RmsNormCase rc;
  bool residual_in_place = false;
  bool norm_into_input = false;
  // Bytes added to every buffer of ranks 1.. (rank 0's stay 16-byte aligned): the plan must not
  // follow one rank's pointers, or the ranks would run different calls (comm/call/fused_staging.h).
  size_t misalign = 0;
};

enum class Path { kFused, kUnfused, kAny };
// How the fused kernel splits a row (the plan's reason says it, plan/fused_plan.cc).
enum class Split { kAny, kCluster, kBlockPerRow };
constexpr const char* kClusterNote = "rows over clusters of ";

// What one call gave (rank 0's outputs, the same on every rank) and which variant ran it.
struct FusedBits {
  std::vector<uint8_t> residual, norm;
  std::string variant;
};

std::string nameOf(const FusedCase& f, int algo, int world);

// Runs one fused call on every rank of g and checks it. The planner (tpcommCommExplainAddRmsNorm,
// CPU-tested in test_fused_plan.cc) says whether the fused kernel serves it or the unfused path;
// `want` pins that where the case is meant to reach one of them, and the call must then have run
// what the planner said. The inputs follow from the case alone, so two calls of one case on two
// communicators take the same inputs (bits: what the call gave).
void runFused(Group& g, int algo, const FusedCase& f, Path want, Split split = Split::kAny,
              FusedBits* bits = nullptr);

// The matrix the fused variants' tests share, on `world` ranks (algo, knobs and slots the
// communicator's): rows 1, 3, 17, 64 and 130 (light: 3 and 130) of 128, 4096 and 7168 bf16 that
// must run `variant`, then fp16 Gemma, fp32, FP8, in place, the norm into the input and unaligned
// ranks.
void runFusedMatrix(int world, int algo, const char* knobs, size_t buffer_bytes, bool light,
                    const char* variant);

// Captures 20 fused calls of `rows` x `hidden` bf16 on `world` ranks (algo and knobs: the
// communicator's) into a graph per rank, replays it 50 times, and checks every rank's outputs
// against its eager call's and rank 0's; prints the time per call.
void graphReplayMatches(int algo, const char* knobs, size_t rows, size_t hidden, int world = 2);

}  // namespace tpcomm::test
