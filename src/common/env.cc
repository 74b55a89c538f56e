#include "common/env.h"

#include <strings.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "common/byte_size.h"

#include "tpcomm/tpcomm.h"

namespace tpcomm {
namespace {

const std::vector<EnvVarDoc> kDocs = {
    {"TPCOMM_LOG", "warn", "none | warn | info | debug (any case): what tpcomm prints to stderr"},
    {"TPCOMM_LOG_FILE", "", "append the log to this file instead of stderr"},
    {"TPCOMM_ALGO", "auto",
     "force one algorithm for every call: auto | oneshot | twoshot | nccl | host_oneshot | "
     "host_twoshot | host_bulk | island | island_pull | oneshot_pull | twoshot_pull | oneshot_ce "
     "(copy engines; only ever forced)"},
    {"TPCOMM_STRICT", "0", "1: a fallback to NCCL is an error (tpcommFallbackRefused)"},
    {"TPCOMM_TIMEOUT_MS", "5000", "deadline of every GPU-side wait for a peer, in milliseconds"},
    {"TPCOMM_INIT_TIMEOUT_MS", "60000",
     "how long tpcommCommInitRank waits for every rank to meet at the rendezvous, in milliseconds"},
    {"TPCOMM_BUFFER_BYTES", "16777216",
     "staging bytes per slot and rank (4 slots; K/M/G suffixes): bounds the one-shot size and "
     "the two-shot chunk"},
    {"TPCOMM_NCCL", "auto", "auto | off: create an NCCL communicator for the fallback at init"},
    {"TPCOMM_NCCL_LIBRARY", "libnccl.so.2", "path of the NCCL library to dlopen"},
    {"TPCOMM_MAX_BLOCKS", "0", "upper bound on the grid of every kernel (0: by message size)"},
    {"TPCOMM_TRANSPORT", "auto", "auto | p2p | host: force the peer-memory or host-memory path"},
    {"TPCOMM_PDL", "1",
     "0: no programmatic dependent launch (sm_90+ only): the pdl knob's default"},
    {"TPCOMM_KNOBS", "",
     "launch knobs, name=value[,...]: block_bytes, host_block_bytes, bulk_block_bytes, "
     "oneshot_step_bytes, bulk_step_bytes, max_threads, push_batch, push_eighths, lean, "
     "host_sentinel, pull_ll_bytes, host_ll_bytes, fused_cluster, fused_pull_ll, "
     "fused_twoshot_rows, "
     "fused_twoshot_push, "
     "host_fence, pdl, "
     "node_small_bytes, variant, wire, wire_min_bytes "
     "(src/plan/knobs.h; for benchmarks and tuning)"},
    {"TPCOMM_WIRE", "none",
     "none | int8 | int4 | fp8 | fp8_e5m2: all-reduces of wire_min_bytes (1 MiB) or more over PCIe "
     "peer memory or pinned host memory move quantized, 32 elements a scale, at the error "
     "docs/PROTOCOL.md states (opt-in; the wire knob's default)"},
    {"TPCOMM_HOST_ID", "",
     "this machine's identity for communicators that span machines (docs/MULTINODE.md); empty: "
     "a hash of the boot id. Set a distinct value per process group to "
     "simulate machines on one host (tests), never two values on one real machine's ranks of "
     "one group"},
    {"TPCOMM_TUNING_FILE", "", "tuning table to use instead of the one in the user's cache folder"},
    {"TPCOMM_FABRIC_PROBE", "auto",
     "auto | cached | off: over PCIe with P2P, init reads the fabric probe's cached verdict and, "
     "with auto, probes when there is none (a few seconds, once per machine); cached: never "
     "probes at init (tpcomm doctor does); off: no verdict, the push defaults"},
};

bool parseInt(const char* s, long lo, long hi, long* out) {
  char* end = nullptr;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// Reads the variables one at a time; what is wrong is collected in e->errors, in the order read.
struct EnvReader {
  const EnvLookup& lookup;
  Env* e;

  // The value, or nullptr when unset or empty.
  const char* get(const char* name) const {
    const char* v = lookup(name);
    return (v && *v) ? v : nullptr;
  }
  void bad(const char* name, const char* value, const char* why) const {
    e->errors.push_back(std::string(name) + "=" + value + ": " + why);
  }
  // One of `names` (*out: its index); unset leaves *out as it is; `expected` says what else.
  void choice(const char* name, std::initializer_list<const char*> names, const char* expected,
              int* out) const {
    const char* s = get(name);
    if (!s) return;
    int i = 0;
    for (const char* n : names) {
      if (!strcmp(s, n)) {
        *out = i;
        return;
      }
      ++i;
    }
    bad(name, s, expected);
  }
  // An integer in lo..hi into *out; unset leaves *out as it is.
  void integer(const char* name, long lo, long hi, const char* expected, int* out) const {
    long v = 0;
    if (const char* s = get(name)) {
      if (parseInt(s, lo, hi, &v))
        *out = static_cast<int>(v);
      else
        bad(name, s, expected);
    }
  }
};

void readBufferBytes(const EnvReader& r) {
  if (const char* s = r.get("TPCOMM_BUFFER_BYTES")) {
    size_t bytes = 0;
    std::string why;
    if (!parseByteSize(s, &bytes, &why))
      r.bad("TPCOMM_BUFFER_BYTES", s, why.c_str());
    else if (bytes < (size_t{64} << 10) || bytes > (size_t{1} << 34))
      r.bad("TPCOMM_BUFFER_BYTES", s, "expected bytes in 64K..16G (65536..2^34)");
    else
      r.e->buffer_bytes = bytes;
  }
}

}  // namespace

bool parseLogLevel(const char* s, LogLevel* out) {
  // Any case: NCCL_DEBUG=INFO is the habit, and vLLM upper-cases the levels it passes on.
  struct Name {
    const char* name;
    LogLevel level;
  };
  static const Name kNames[] = {{"none", LogLevel::kNone},    {"warn", LogLevel::kWarn},
                                {"warning", LogLevel::kWarn}, {"info", LogLevel::kInfo},
                                {"debug", LogLevel::kDebug},  {"trace", LogLevel::kDebug}};
  for (const Name& n : kNames)
    if (!strcasecmp(s, n.name)) {
      *out = n.level;
      return true;
    }
  return false;
}

Env parseEnvironment(const EnvLookup& lookup) {
  Env e;
  const EnvReader r{lookup, &e};
  if (const char* s = r.get("TPCOMM_LOG")) {
    if (!parseLogLevel(s, &e.log_level))
      r.bad("TPCOMM_LOG", s, "expected none, warn, info or debug (any case)");
  }
  if (const char* s = r.get("TPCOMM_LOG_FILE")) e.log_file = s;
  if (const char* s = r.get("TPCOMM_ALGO")) {
    e.algo = parseAlgoName(s);
    if (e.algo < 0) r.bad("TPCOMM_ALGO", s, "not an algorithm name (see tpcomm doctor --env)");
    if (e.algo == tpcommAlgoAuto) e.algo = -1;
  }
  r.integer("TPCOMM_STRICT", 0, 1, "expected 0 or 1", &e.strict);
  r.integer("TPCOMM_TIMEOUT_MS", 1, 3600 * 1000, "expected milliseconds in 1..3600000",
            &e.timeout_ms);
  r.integer("TPCOMM_INIT_TIMEOUT_MS", 1, 3600 * 1000, "expected milliseconds in 1..3600000",
            &e.init_timeout_ms);
  readBufferBytes(r);
  if (const char* s = r.get("TPCOMM_NCCL")) {
    if (!strcmp(s, "auto"))
      e.nccl_mode = tpcommNcclAuto;
    else if (!strcmp(s, "off") || !strcmp(s, "0"))
      e.nccl_mode = tpcommNcclOff;
    else
      r.bad("TPCOMM_NCCL", s, "expected auto or off");
  }
  if (const char* s = r.get("TPCOMM_NCCL_LIBRARY")) e.nccl_library = s;
  r.integer("TPCOMM_MAX_BLOCKS", 0, 1024, "expected 0..1024", &e.max_blocks);
  r.choice("TPCOMM_TRANSPORT", {"auto", "p2p", "host"}, "expected auto, p2p or host", &e.transport);
  r.choice("TPCOMM_FABRIC_PROBE", {"auto", "cached", "off"}, "expected auto, cached or off",
           &e.fabric_probe);
  r.integer("TPCOMM_PDL", 0, 1, "expected 0 or 1", &e.pdl);
  if (const char* s = r.get("TPCOMM_TUNING_FILE")) e.tuning_file = s;
  if (const char* s = r.get("TPCOMM_HOST_ID")) {
    // Leaves room for the NUL in RankInfo::host_id (comm/lifecycle/host_id.h).
    if (strlen(s) >= 64)
      r.bad("TPCOMM_HOST_ID", s, "expected at most 63 characters");
    else
      e.host_id = s;
  }
  if (const char* s = r.get("TPCOMM_KNOBS")) e.knobs = s;  // parsed by comm/lifecycle/config.cc
  if (const char* s = r.get("TPCOMM_WIRE")) e.wire = s;    // the wire knob, the same way
  return e;
}

const Env& env() {
  static const Env e = parseEnvironment([](const char* name) { return getenv(name); });
  return e;
}

void logEnvOnce() {
  static const bool logged = [] {
    for (const EnvVarDoc& d : kDocs)
      if (const char* v = getenv(d.name)) TPCOMM_INFO(ENV, "%s set to '%s'", d.name, v);
    return true;
  }();
  (void)logged;
}

const std::vector<EnvVarDoc>& envDocs() {
  return kDocs;
}

int parseAlgoName(const std::string& name) {
  for (int a = 0; a < tpcommNumAlgos; ++a)
    if (name == tpcommAlgoName(a)) return a;
  return -1;
}

}  // namespace tpcomm
