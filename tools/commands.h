// Subcommands of the `tpcomm` command-line tool, one file each.
#pragma once

namespace tpcomm::cli {

int cmdInspect(int argc, char** argv);  // tools/cmd_inspect.cc
int cmdDoctor(int argc, char** argv);   // tools/cmd_doctor.cc
int cmdTune(int argc, char** argv);     // tools/cmd_tune.cc

}  // namespace tpcomm::cli
