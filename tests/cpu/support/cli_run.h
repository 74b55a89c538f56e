// Runs a shell command line for the command-line tests (tpcomm doctor, inspect, tune): what it
// printed on stdout (the command line decides what happens to stderr) and its exit status.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace tpcomm::test {

struct CliResult {
  int status = -1;  // the exit status, or -1 if the command did not exit normally
  std::string out;
};

inline CliResult runCommand(const std::string& cmd) {
  CliResult res;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return res;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) res.out.append(buf, n);
  const int st = pclose(p);
  res.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return res;
}

}  // namespace tpcomm::test
