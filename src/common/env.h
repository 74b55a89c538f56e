// Every environment variable tpcomm reads, in one place, read once and cached. The table in
// env.cc is the documentation (README "Environment variables" is generated from the same list by
// `tpcomm doctor --env`). A value that does not parse is an init error, never silently ignored.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "common/log.h"

namespace tpcomm {

struct EnvVarDoc {
  const char* name;
  const char* default_value;
  const char* meaning;
};

struct Env {
  LogLevel log_level = LogLevel::kWarn;
  std::string log_file;
  int algo = -1;   // -1: auto; else tpcommAlgo_t
  int strict = 0;  // 1: any fallback is an error
  int timeout_ms = 5000;
  int init_timeout_ms = 60000;
  size_t buffer_bytes = 0;  // 0: built-in default (see comm/lifecycle/config.cc)
  int nccl_mode = 0;        // tpcommNcclMode_t (auto / off)
  std::string nccl_library;
  int max_blocks = 0;
  int transport = 0;  // 0 auto, 1 p2p, 2 host
  int pdl = 1;        // programmatic dependent launch on sm_90+
  std::string tuning_file;
  int fabric_probe = 0;             // 0 auto, 1 cached, 2 off (TPCOMM_FABRIC_PROBE)
  std::string knobs;                // TPCOMM_KNOBS as given (plan/knobs.h parses it)
  std::string wire;                 // TPCOMM_WIRE as given: the wire knob's default
  std::string host_id;              // TPCOMM_HOST_ID (comm/lifecycle/host_id.h); empty: not set
  std::vector<std::string> errors;  // "TPCOMM_X=value: why"; init fails when non-empty
};

const Env& env();
// The variables as `lookup` (getenv, or a table in tests) gives them; env() is this over getenv.
using EnvLookup = std::function<const char*(const char*)>;
Env parseEnvironment(const EnvLookup& lookup);
// TPCOMM_LOG's names, any case: none, warn (warning), info, debug (trace). False if unknown.
bool parseLogLevel(const char* text, LogLevel* out);
// Logs every TPCOMM_* variable that is set, once per process (at INFO, from communicator init).
void logEnvOnce();
const std::vector<EnvVarDoc>& envDocs();
// Parses the algorithm names used by TPCOMM_ALGO and the tools ("oneshot", ...); -1 if unknown.
int parseAlgoName(const std::string& name);

}  // namespace tpcomm
