// Where the copy-engine one-shot's words and landing regions are in a rank's CE area
// (device_comm.h: CeControl, then kNumSlots landing slots of slot_bytes, one region per source
// rank). The host computes its copies' addresses with these (comm/call/ce_copies.cc), the kernels
// their loads (oneshot_ce.cu), so the two cannot disagree; the CPU tests walk them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/layout/device_comm.h"
#include "kernels/layout/ll_layout.h"  // TPCOMM_HOST_DEVICE

namespace tpcomm {

// The operand that tells the CE kernel which job it does: the landing slot of this step in bits
// 0..1, and kCeGuardOp for the guard, kCeWaitOp for the wait, neither for the reduce (one kernel,
// so the start-up image check covers all three; comm/call/ce_steps.h lists a step's operations).
constexpr size_t kCeGuardOp = size_t{1} << 8;
constexpr size_t kCeWaitOp = size_t{1} << 9;
constexpr size_t kCeSlotMask = kNumSlots - 1;
static_assert((kNumSlots & (kNumSlots - 1)) == 0, "the slot is masked out of the operand");

TPCOMM_HOST_DEVICE inline CeControl* ceControl(char* area) {
  return reinterpret_cast<CeControl*>(area);
}

// Source `src`'s region of landing slot `slot` (region_bytes: a source's share of a slot, the
// one-shot's step: SlotCapacity::oneshot_step_bytes).
TPCOMM_HOST_DEVICE inline char* ceLanding(char* area, size_t slot_bytes, int slot, int src,
                                          size_t region_bytes) {
  return area + kCeControlBytes + static_cast<size_t>(slot) * slot_bytes +
         static_cast<size_t>(src) * region_bytes;
}

// The flag and acknowledgement values of a step: its epoch + 1, so zeroed memory is neither.
TPCOMM_HOST_DEVICE inline unsigned long long ceStepMark(unsigned long long epoch) {
  return epoch + 1;
}
constexpr unsigned long long kCeNoFlag = 0;          // a flag copy after a failed guard
constexpr unsigned long long kCeAckForever = ~0ull;  // an aborted reader: it reads no more

}  // namespace tpcomm
