#include "comm/lifecycle/config.h"

#include <algorithm>
#include <cstddef>
#include <string>

#include "common/env.h"
#include "common/error.h"
#include "kernels/layout/device_comm.h"
#include "kernels/runtime/algo_launch.h"

namespace tpcomm {
namespace {

// Applies one knob string (TPCOMM_KNOBS or config.launchKnobs) and checks the result.
tpcommResult_t applyKnobs(const char* where, const std::string& spec, LaunchKnobs* k) {
  const std::string why = applyLaunchKnobs(spec, k);
  if (!why.empty())
    return fail(tpcommInvalidArgument, "%s=%s: %s", where, spec.c_str(), why.c_str());
  return tpcommSuccess;
}

}  // namespace

tpcommResult_t settingsFromEnv(const Env& e, Settings* s) {
  if (!e.errors.empty()) {
    std::string all;
    for (const std::string& err : e.errors) all += (all.empty() ? "" : "; ") + err;
    return fail(tpcommInvalidArgument, "bad environment: %s", all.c_str());
  }
  if (e.buffer_bytes) s->slot_bytes = e.buffer_bytes;
  s->timeout_ms = e.timeout_ms;
  s->init_timeout_ms = e.init_timeout_ms;
  s->strict = e.strict != 0;
  s->algo = e.algo;
  s->nccl_mode = e.nccl_mode;
  s->max_blocks = e.max_blocks;
  s->transport = e.transport;
  s->knobs.pdl = e.pdl != 0;  // TPCOMM_PDL: the pdl knob's default, TPCOMM_KNOBS on top
  if (!e.wire.empty()) TPCOMM_CHECK(applyKnobs("TPCOMM_WIRE", "wire=" + e.wire, &s->knobs));
  return applyKnobs("TPCOMM_KNOBS", e.knobs, &s->knobs);
}

namespace {

// Whether the caller's struct is one this library can read.
tpcommResult_t checkConfigStruct(const tpcommConfig_t& config) {
  if (config.magic != TPCOMM_CONFIG_MAGIC || config.size < sizeof(size_t) * 2)
    return fail(tpcommInvalidArgument,
                "config: not initialised with TPCOMM_CONFIG_INITIALIZER (magic 0x%x)",
                config.magic);
  if (config.version > TPCOMM_CONFIG_VERSION || config.size > sizeof(tpcommConfig_t))
    return fail(tpcommInvalidArgument,
                "config: version %u (size %zu) is newer than this "
                "library (version %u)",
                config.version, config.size, TPCOMM_CONFIG_VERSION);
  return tpcommSuccess;
}

// The fields that version 2 added: initTimeoutMs and launchKnobs.
tpcommResult_t applyVersion2Fields(const tpcommConfig_t& config, Settings* s) {
  // A version-1 struct has the same size (initTimeoutMs sits in what was tail padding), so
  // the version, not the size, says whether the field is there.
  if (config.version >= 2 && config.size >= offsetof(tpcommConfig_t, initTimeoutMs) + sizeof(int)) {
    if (config.initTimeoutMs < 0 || config.initTimeoutMs > 3600 * 1000)
      return fail(tpcommInvalidArgument,
                  "config.initTimeoutMs=%d: expected 1..3600000 ms (0: default)",
                  config.initTimeoutMs);
    if (config.initTimeoutMs > 0) s->init_timeout_ms = config.initTimeoutMs;
  }
  // Version 1 structs end before launchKnobs.
  const bool has_knobs =
      config.version >= 2 && config.size >= offsetof(tpcommConfig_t, launchKnobs) + sizeof(char*);
  if (has_knobs && config.launchKnobs)
    return applyKnobs("config.launchKnobs", config.launchKnobs, &s->knobs);
  return tpcommSuccess;
}

// Overrides *s with what the caller's config sets, checking each field.
tpcommResult_t applyConfig(const tpcommConfig_t& config, Settings* s) {
  TPCOMM_CHECK(checkConfigStruct(config));
  if (config.bufferBytes) {
    if (config.bufferBytes < (64u << 10) || config.bufferBytes > (size_t{1} << 34))
      return fail(tpcommInvalidArgument, "config.bufferBytes=%zu: expected 65536..2^34",
                  config.bufferBytes);
    s->slot_bytes = config.bufferBytes;
  }
  if (config.timeoutMs < 0)
    return fail(tpcommInvalidArgument, "config.timeoutMs=%d: expected > 0 (0: default)",
                config.timeoutMs);
  if (config.timeoutMs > 0) s->timeout_ms = config.timeoutMs;
  if (config.strict != -1) {
    if (config.strict != 0 && config.strict != 1)
      return fail(tpcommInvalidArgument, "config.strict=%d: expected -1, 0 or 1", config.strict);
    s->strict = config.strict == 1;
  }
  if (config.algo != -1) {
    if (config.algo < 0 || config.algo >= tpcommNumAlgos)
      return fail(tpcommInvalidArgument, "config.algo=%d: not a tpcommAlgo_t", config.algo);
    s->algo = config.algo == tpcommAlgoAuto ? -1 : config.algo;
  }
  if (config.ncclMode != -1) {
    if (config.ncclMode < tpcommNcclAuto || config.ncclMode > tpcommNcclGiven)
      return fail(tpcommInvalidArgument, "config.ncclMode=%d: not a tpcommNcclMode_t",
                  config.ncclMode);
    s->nccl_mode = config.ncclMode;
  }
  if (s->nccl_mode == tpcommNcclGiven) {
    if (!config.ncclComm)
      return fail(tpcommInvalidArgument, "config.ncclMode=tpcommNcclGiven needs config.ncclComm");
    s->nccl_comm = config.ncclComm;
  }
  if (config.maxBlocks < 0 || config.maxBlocks > 1024)
    return fail(tpcommInvalidArgument, "config.maxBlocks=%d: expected 0..1024", config.maxBlocks);
  if (config.maxBlocks > 0) s->max_blocks = config.maxBlocks;
  return applyVersion2Fields(config, s);
}

}  // namespace

std::string applyLaunchKnobs(const std::string& spec, LaunchKnobs* k) {
  std::string why = parseLaunchKnobs(spec, k);
  if (why.empty()) why = launchKnobsError(*k, kThreadsPerBlock);
  return why;
}

tpcommResult_t resolveSettings(const tpcommConfig_t* config, Settings* out) {
  Settings s;
  TPCOMM_CHECK(settingsFromEnv(env(), &s));
  if (config) TPCOMM_CHECK(applyConfig(*config, &s));
  s.slot_bytes = s.slot_bytes / 256 * 256;  // keeps every region 16-byte aligned at any world size
  // Host inboxes are a quarter of the device slots: the host path is latency-bound (LL packets)
  // and every rank's inbox lives in one shared segment of host memory. Whole LL blocks, so that
  // every inbox slot starts on one (the segment's header is a multiple too).
  s.host_slot_bytes = std::max<size_t>(64u << 10, s.slot_bytes / 4 / kLLBlockBytes * kLLBlockBytes);
  *out = s;
  return tpcommSuccess;
}

}  // namespace tpcomm
