// Subcommands of the `tpcomm` command-line tool, one file each.
#pragma once

namespace tpcomm::cli {

int cmdInspect(int argc, char** argv);  // tools/inspect/cmd_inspect.cc
int cmdDoctor(int argc, char** argv);   // tools/doctor/cmd_doctor.cc
int cmdTune(int argc, char** argv);     // tools/tune/cmd_tune.cc

}  // namespace tpcomm::cli
