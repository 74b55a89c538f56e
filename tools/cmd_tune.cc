#include <cstdio>

#include "tools/commands.h"

namespace tpcomm::cli {
int cmdTune(int, char**) {
  fprintf(stderr, "tpcomm tune: not built yet\n");
  return 2;
}
}  // namespace tpcomm::cli
