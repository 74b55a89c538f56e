// tpcommConfig_t + environment -> the settings a communicator runs with. The config struct wins
// over the environment field by field; built-in defaults fill the rest.
#pragma once

#include <cstddef>
#include <string>

#include "common/env.h"
#include "plan/knobs.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

constexpr size_t kDefaultSlotBytes = 16u << 20;  // 16 MiB a slot, 64 MiB a rank

struct Settings {
  size_t slot_bytes = kDefaultSlotBytes;
  size_t host_slot_bytes = kDefaultSlotBytes / 4;  // host inbox slot (pinned host memory)
  int timeout_ms = 5000;
  int init_timeout_ms = 60000;  // the rendezvous of tpcommCommInitRank (ranks start at any pace)
  bool strict = false;
  int algo = -1;  // -1 auto
  int nccl_mode = tpcommNcclAuto;
  void* nccl_comm = nullptr;
  int max_blocks = 0;
  int transport = 0;  // 0 auto, 1 p2p, 2 host
  LaunchKnobs knobs;  // TPCOMM_KNOBS, then config.launchKnobs on top (max_blocks above; TPCOMM_PDL
                      // gives pdl's default)
};

// Applies a knob string (TPCOMM_KNOBS or config.launchKnobs) to *k and checks the result against
// the kernels' bounds: "" when it can be used, else why. Init runs it (a failure is
// tpcommInvalidArgument), and `tpcomm doctor` runs it on TPCOMM_KNOBS.
std::string applyLaunchKnobs(const std::string& spec, LaunchKnobs* k);

// The settings from the environment alone (env(), or a table in tests); fails on any bad
// variable. TPCOMM_PDL gives the pdl knob's default, TPCOMM_KNOBS applies on top.
tpcommResult_t settingsFromEnv(const Env& e, Settings* s);

// Validates config (NULL allowed) and the environment; a bad field is tpcommInvalidArgument.
tpcommResult_t resolveSettings(const tpcommConfig_t* config, Settings* out);

}  // namespace tpcomm
