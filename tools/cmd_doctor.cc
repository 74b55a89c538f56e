#include <cstdio>

#include "tools/commands.h"

namespace tpcomm::cli {
int cmdDoctor(int, char**) {
  fprintf(stderr, "tpcomm doctor: not built yet\n");
  return 2;
}
}  // namespace tpcomm::cli
