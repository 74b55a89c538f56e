// tpcomm-bench --sweep-knobs: the launch-knob variants timed next to the defaults, each a label,
// an algorithm and a TPCOMM_KNOBS string (plan/knobs.h) its communicators are created with.
#pragma once

#include <string>
#include <vector>

namespace tpcomm::bench {

struct KnobVariant {
  std::string label;  // e.g. "oneshot/2K/p1", "host_bulk/16K/step64K/s2", "auto/nolean"
  int algo;           // tpcommAlgo_t
  std::string knobs;  // config.launchKnobs
};

// The variants for the backends named (kernel algorithms among them; others are skipped).
std::vector<KnobVariant> knobVariants(const std::vector<std::string>& backends);

}  // namespace tpcomm::bench
