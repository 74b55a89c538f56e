// One process per rank: the test re-executes this binary as `--mp-child SCENARIO RANK NRANKS ID
// DIR` (a fresh process, never a fork of one that has touched CUDA) and reads back exit codes and
// each child's output digests.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tpcomm/tpcomm.h"

namespace tpcomm::test {

// Runs the child side; returns the process exit code.
int runChild(int argc, char** argv);

struct ChildRun {
  std::vector<int> exit_codes;
  std::vector<std::string> reports;  // contents of DIR/rank<N>.txt
  bool timed_out = false;
};

// extra_env: "NAME=value" entries added to the children's environment; rank_env(r): more of
// them for rank r only (simulated machines: tests/gpu/test_multinode.cc).
ChildRun spawnChildren(const std::string& scenario, int nranks, int timeout_s,
                       const std::vector<std::string>& extra_env = {},
                       const std::function<std::vector<std::string>(int)>& rank_env = nullptr);

// The child side of the scenarios named "mn-..." (tests/gpu/test_multinode.cc).
int runMultinodeChild(const std::string& scenario, int rank, int nranks, const tpcommUniqueId& id,
                      const std::string& dir);

}  // namespace tpcomm::test
