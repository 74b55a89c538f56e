#include "bench/knob_sweep.h"

#include <algorithm>

#include "common/env.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm::bench {
namespace {

std::string kib(int bytes) {
  return bytes >= 1024 ? std::to_string(bytes / 1024) + "K" : std::to_string(bytes);
}

bool listed(const std::vector<std::string>& backends, const char* name) {
  return std::find(backends.begin(), backends.end(), name) != backends.end();
}

}  // namespace

std::vector<KnobVariant> knobVariants(const std::vector<std::string>& backends) {
  std::vector<KnobVariant> out;
  auto add = [&](std::string label, int algo, std::string knobs) {
    out.push_back({std::move(label), algo, std::move(knobs)});
  };
  // Grid shapes around the defaults, for each kernel algorithm listed: labels are
  // algo/bytes-per-block/push-batch. host_bulk: bytes per block by bytes per step by push share.
  for (const std::string& name : backends) {
    const int algo = parseAlgoName(name);
    if (algo <= tpcommAlgoAuto || algo == tpcommAlgoNccl || algo == tpcommAlgoIsland ||
        algo == tpcommAlgoIslandPull)
      continue;
    if (algo == tpcommAlgoHostBulk) {
      for (int bb : {2048, 4096, 8192, 16384})
        for (int step : {0, 256 << 10, 128 << 10, 64 << 10, 32 << 10})
          for (int e : {2, 4})
            add(name + "/" + kib(bb) + "/step" + (step ? kib(step) : std::string("slot")) + "/s" +
                    std::to_string(e),
                algo,
                "bulk_block_bytes=" + std::to_string(bb) + ",bulk_step_bytes=" +
                    std::to_string(step) + ",push_eighths=" + std::to_string(e));
      continue;
    }
    for (int bb : {512, 1024, 2048, 4096, 8192, 16384})
      for (int pb : {1, 4})
        add(name + "/" + kib(bb) + "/p" + std::to_string(pb), algo,
            "block_bytes=" + std::to_string(bb) + ",host_block_bytes=" + std::to_string(bb) +
                ",push_batch=" + std::to_string(pb));
  }
  // The split one-shot's push share (multi-step calls only), and its steps shorter than a slot's
  // region (pb 0: the grid's batch, 4 from 8 MiB).
  if (listed(backends, "oneshot")) {
    for (int e : {1, 2, 3, 4, 5})
      add("oneshot/split" + std::to_string(e), tpcommAlgoOneShot,
          "push_eighths=" + std::to_string(e));
    for (int mb : {1, 2, 3, 4, 6, 8})
      for (int pb : {0, 1})
        add("oneshot/step" + std::to_string(mb) + "M" + (pb ? "/p1" : ""), tpcommAlgoOneShot,
            "oneshot_step_bytes=" + std::to_string(mb << 20) + ",push_batch=" + std::to_string(pb));
  }
  // host_oneshot with LL packets for every call (the sentinel protocol off), by bytes per block.
  // And with a system-scope fence after every reader's clears (host_fence: docs/PROTOCOL.md, "The
  // host sentinel's clears"), the cost of ordering them by the PTX model, both ways forced (the
  // default, auto, follows the driver's PCIe Relaxed Ordering).
  if (listed(backends, "host_oneshot")) {
    for (int bb : {1024, 4096})
      add("host_oneshot/ll/" + kib(bb), tpcommAlgoHostOneShot,
          "host_sentinel=0,host_block_bytes=" + std::to_string(bb));
    add("host_oneshot/nofence", tpcommAlgoHostOneShot, "host_fence=0");
    add("host_oneshot/fence", tpcommAlgoHostOneShot, "host_fence=1");
  }
  // The defaults without programmatic dependent launch, and with the general one-shot kernel
  // where the lean one would run.
  add("auto/nopdl", tpcommAlgoAuto, "pdl=0");
  add("auto/nolean", tpcommAlgoAuto, "lean=0");
  return out;
}

}  // namespace tpcomm::bench
