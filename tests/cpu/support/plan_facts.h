// A communicator's facts for the planner's CPU tests (test_planner.cc, test_fused_plan.cc): 16 MiB
// peer slots, and over host memory the host slots of a 4 MiB inbox, as init builds them. With a
// forced variant (`variant`, the knob's value; the caller sets the knob), the transport init sets
// up for it (needsHostTransport, needsCeStaging), whatever the fabric.
#pragma once

#include "kernels/runtime/algo_launch.h"
#include "plan/planner.h"

namespace tpcomm {

inline CommFacts factsFor(int world, Fabric fabric, int forced_algo = -1, int variant = -1) {
  constexpr size_t kMiB = 1024 * 1024;
  DeviceComm d{};
  d.world = world;
  d.slot_bytes = 16 * kMiB;
  CommFacts f;
  f.world = world;
  f.fabric = fabric;
  f.forced_algo = forced_algo;
  f.nccl_available = true;
  f.host_transport =
      fabric == Fabric::kHost || needsHostTransport(world, fabric, /*forced_algo=*/-1, variant);
  if (f.host_transport) {
    d.host_slot_bytes = 4 * kMiB;
    d.out_slot_bytes = bulkSlotBytes(d.host_slot_bytes);
    d.hs_slot_bytes = kHostSentinelSlotBytes;
  }
  // oneshot_ce forced (algorithm or variant): the CE area exists (init makes it then); the planner
  // only asks whether.
  static char ce_area;
  f.ce_staging = needsCeStaging(forced_algo, variant) && fabric != Fabric::kHost;
  if (f.ce_staging) d.ce[0] = &ce_area;
  f.slots = slotCapacity(d);
  return f;
}

}  // namespace tpcomm
