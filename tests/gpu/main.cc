// The GPU suite's entry point: also the child side of the multi-process tests.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/gpu/multiprocess.h"

int main(int argc, char** argv) {
  if (argc > 1 && !strcmp(argv[1], "--mp-child")) return tpcomm::test::runChild(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
