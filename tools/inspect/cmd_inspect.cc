// `tpcomm inspect`: list the CUDA images in ELF files and say which GPUs can run them.
// Exit status: 0 every requested cc can run every file, 1 some cannot, 2 usage or read error,
// 3 some verdict is unknown (an image that decides is corrupt or could not be opened).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "inspect/inspect.h"
#include "inspect/report.h"
#include "tools/commands.h"

namespace tpcomm::cli {

namespace {

constexpr int kExitOk = 0, kExitCannotRun = 1, kExitUsage = 2, kExitUnknown = 3;

void usage(FILE* out) {
  fprintf(out,
          "usage: tpcomm inspect [--cc X.Y]... [--cc all-known] [--json] FILE...\n"
          "\n"
          "Lists the CUDA images (SASS cubins, PTX, LTO IR) in ELF files: shared libraries,\n"
          "executables, object files. Reads the files only: needs no GPU and no driver.\n"
          "\n"
          "  --cc X.Y        also say whether a GPU of compute capability X.Y can run each file:\n"
          "                  natively (which cubin), only by PTX JIT, or not at all; repeatable\n"
          "  --cc all-known  every cc tpcomm knows: 7.5 8.0 8.6 8.7 8.9 9.0 10.0 10.3 11.0\n"
          "                  12.0 12.1\n"
          "  --json          machine-readable output\n"
          "\n"
          "Errors go to stderr. A kernel count '?N' is explained by the note ?N under the\n"
          "table (PTX and cubins are decompressed and counted; LTO IR is not opened).\n"
          "\n"
          "Exit status: 0 every requested cc can run every file, 1 some cannot, 2 usage or\n"
          "read error, 3 some verdict is unknown (a corrupt or unreadable image decides it).\n"
          "See docs/INSPECT.md for the rules.\n");
}

bool addCc(const std::string& text, inspect::CcList* ccs) {
  if (text == "all-known") {
    for (const auto& cc : inspect::knownCcs()) ccs->push_back(cc);
    return true;
  }
  int major = 0, minor = 0;
  if (!inspect::parseCc(text, &major, &minor)) return false;
  ccs->emplace_back(major, minor);
  return true;
}

}  // namespace

int cmdInspect(int argc, char** argv) {
  inspect::CcList ccs;
  std::vector<std::string> paths;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return kExitOk;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--cc" || arg.compare(0, 5, "--cc=") == 0) {
      std::string value;
      if (arg == "--cc") {
        if (i + 1 >= argc) {
          fprintf(stderr, "tpcomm inspect: --cc needs a value (X.Y or all-known)\n");
          return kExitUsage;
        }
        value = argv[++i];
      } else {
        value = arg.substr(5);
      }
      if (!addCc(value, &ccs)) {
        fprintf(stderr,
                "tpcomm inspect: bad compute capability '%s': expected X.Y (e.g. 9.0) or "
                "all-known\n",
                value.c_str());
        return kExitUsage;
      }
    } else if (arg == "--") {
      for (++i; i < argc; ++i) paths.push_back(argv[i]);
    } else if (arg.size() > 1 && arg[0] == '-') {
      fprintf(stderr, "tpcomm inspect: unknown option '%s'\n\n", arg.c_str());
      usage(stderr);
      return kExitUsage;
    } else {
      paths.push_back(arg);
    }
  }
  if (paths.empty()) {
    fprintf(stderr, "tpcomm inspect: no FILE given\n\n");
    usage(stderr);
    return kExitUsage;
  }

  std::vector<inspect::FileReport> reports(paths.size());
  bool read_error = false;
  for (size_t i = 0; i < paths.size(); ++i)
    read_error |= !inspect::inspectFile(paths[i], &reports[i]);
  const std::string out =
      json ? inspect::jsonReport(reports, ccs) : inspect::humanReport(reports, ccs);
  fputs(out.c_str(), stdout);
  fflush(stdout);
  // Errors once, on stderr (the table leaves them out; --json also lists them per file).
  for (const inspect::FileReport& r : reports)
    for (const std::string& e : r.errors)
      fprintf(stderr, "tpcomm inspect: %s: %s\n", r.path.c_str(), e.c_str());
  if (read_error) return kExitUsage;
  if (inspect::anyCannotRun(reports, ccs)) return kExitCannotRun;
  return inspect::allCanRun(reports, ccs) ? kExitOk : kExitUnknown;
}

}  // namespace tpcomm::cli
