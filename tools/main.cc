// `tpcomm`: the command a user runs on a new box before trusting it.
#include <cstdio>
#include <cstring>

#include "tools/commands.h"
#include "tpcomm/tpcomm.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int, char**);
  const char* help;
};

const Command kCommands[] = {
    {"inspect", tpcomm::cli::cmdInspect,
     "list the CUDA images in ELF files and say which GPUs they run on"},
    {"doctor", tpcomm::cli::cmdDoctor,
     "check this machine: driver, GPUs, links, architecture coverage, policy"},
    {"tune", tpcomm::cli::cmdTune, "measure the algorithms here and write a tuning table"},
};

void usage(FILE* out) {
  fprintf(out, "usage: tpcomm <command> [options]   (tpcomm <command> --help for more)\n\n");
  for (const Command& c : kCommands) fprintf(out, "  %-8s %s\n", c.name, c.help);
  fprintf(out, "  %-8s %s\n", "version", "print the library version");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
    int v = 0;
    tpcommGetVersion(&v);
    printf("tpcomm %d.%d.%d\n", v / 10000, (v / 100) % 100, v % 100);
    return 0;
  }
  for (const Command& c : kCommands)
    if (!strcmp(argv[1], c.name)) return c.run(argc - 1, argv + 1);
  fprintf(stderr, "tpcomm: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
