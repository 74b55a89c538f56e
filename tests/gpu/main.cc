// The GPU suite's entry point: also the child side of the multi-process tests.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "tests/gpu/multiprocess.h"

int main(int argc, char** argv) {
  // Before the first CUDA call (the driver reads it at cuInit), and inherited by the children:
  // one thread launches every in-process rank's call, and under lazy loading (CUDA's default
  // since 12.2) the first launch of a kernel not yet loaded may wait for the GPU to go idle while
  // a rank's kernel already waits on it for a launch the thread has not made: a deadlock until
  // tpcomm's timeout. Eager loading is the one guard that covers every kernel the tests launch
  // (theirs, tpcomm's, NCCL's), not only those a warm-up happens to run first.
  setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  if (argc > 1 && !strcmp(argv[1], "--mp-child")) return tpcomm::test::runChild(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
