// GPU test harness: a group of in-process ranks (tpcommCommInitAll) over the visible GPUs, round
// robin (so world sizes above the GPU count share GPUs), with one non-blocking stream per rank and
// reusable buffers; plus running one all-reduce and checking it against the host reference.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "support/host_data.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm::test {

int visibleGpus();

// The largest world a test with several worlds should run: TPCOMM_TEST_MAX_WORLD, else 8.
// run_suite.sh lowers it for the compute-sanitizer steps, under which world 8's island kernels
// never all start (docs/BENCHMARKS.md, "Seventeenth round": not the co-residency rule's doing).
int maxTestWorld();

struct Group {
  int world = 0;
  std::vector<int> devs;
  std::vector<tpcommComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<char*> send;  // per rank, `capacity` bytes + slack for misaligned offsets
  std::vector<char*> recv;
  size_t capacity = 0;

  ~Group();
  bool distinctGpus() const;
};

// tpcommGroupStart/End as a scope, for blocks with ASSERTs: one that returns early still ends the
// group (left open, it would defer every later NCCL fallback call of this thread: the tests after
// the first failure would fail or hang too).
struct GroupScope {
  GroupScope() { tpcommGroupStart(); }
  ~GroupScope() { tpcommGroupEnd(); }
  GroupScope(const GroupScope&) = delete;
  GroupScope& operator=(const GroupScope&) = delete;
};

// Creates world ranks; cfg may be NULL. On failure returns null and sets *err.
std::unique_ptr<Group> makeGroup(int world, const tpcommConfig_t* cfg, size_t capacity,
                                 std::string* err);
tpcommConfig_t configFor(int algo, int max_blocks = 0, int timeout_ms = 20000);
// config.launchKnobs that make host_oneshot take LL packets for every size (by default the calls
// that fit one step of the host sentinel inboxes take the sentinel protocol).
constexpr const char* kHostLLKnobs = "host_sentinel=0";

struct Case {
  tpcommDataType_t dtype = tpcommBfloat16;
  size_t count = 0;
  bool in_place = false;
  size_t offset_elems = 0;  // added to both pointers: misaligned when not a multiple of 16 bytes
  uint64_t seed = 1;
};

struct Outcome {
  tpcommResult_t result = tpcommSuccess;  // of the first failing tpcommAllReduce
  std::string error;
  size_t wrong = 0;  // elements outside tolerance, summed over ranks
  size_t first_wrong = 0;
  bool ranks_agree = true;  // bit-identical outputs on every rank
  std::string describe() const;
};

// Waits for rank r's stream: the calls on it must have finished without an asynchronous error
// (a timeout) and left the current device at rank r's GPU.
::testing::AssertionResult drained(Group& g, int r);

// Runs c on every rank (outputs poisoned first) and checks the results.
Outcome runCase(Group& g, const Case& c);

std::string caseName(const Case& c, int algo, int world);

}  // namespace tpcomm::test
