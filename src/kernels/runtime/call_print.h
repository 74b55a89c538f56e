// A call's fingerprint as its 16-byte record (the four 32-bit words of a uint4), packed and
// unpacked the same way on the device (print_device.cuh) and the host
// (comm/lifecycle/async_error.h), which the CPU tests walk. Both 8-byte halves carry the epoch's
// tag, so a record torn into its halves reads as "not arrived yet", never as a different call; a
// zeroed record (kind 0) is never one.
#pragma once

#include <cstdint>

#include "kernels/layout/device_comm.h"
#include "kernels/layout/ll_layout.h"  // TPCOMM_HOST_DEVICE

namespace tpcomm {

struct PrintWords {
  uint32_t tag0, count_lo, tag1, meta;  // meta: count bits 32..47 << 16 | kind << 8 | dtype
};

TPCOMM_HOST_DEVICE inline uint32_t printTag(unsigned long long epoch) {
  return static_cast<uint32_t>(epoch);
}

TPCOMM_HOST_DEVICE inline PrintWords packPrint(unsigned long long epoch, unsigned long long count,
                                               int dtype, int kind) {
  const uint32_t tag = printTag(epoch);
  const uint32_t hi = static_cast<uint32_t>((count >> 32) & 0xFFFFu);
  return PrintWords{
      tag, static_cast<uint32_t>(count), tag,
      hi << 16 | static_cast<uint32_t>(kind & 0xFF) << 8 | static_cast<uint32_t>(dtype & 0xFF)};
}

// The record of the call at `epoch` has arrived whole.
TPCOMM_HOST_DEVICE inline bool printArrived(const PrintWords& w, unsigned long long epoch) {
  return w.tag0 == printTag(epoch) && w.tag1 == printTag(epoch) && ((w.meta >> 8) & 0xFFu) != 0;
}

// Two arrived records describe the same call.
TPCOMM_HOST_DEVICE inline bool printsAgree(const PrintWords& a, const PrintWords& b) {
  return a.count_lo == b.count_lo && a.meta == b.meta;
}

TPCOMM_HOST_DEVICE inline CallPrint unpackPrint(const PrintWords& w) {
  CallPrint p;
  p.count = static_cast<unsigned long long>(w.meta >> 16) << 32 | w.count_lo;
  p.dtype = static_cast<int>(w.meta & 0xFFu);
  p.kind = static_cast<int>((w.meta >> 8) & 0xFFu);
  return p;
}

}  // namespace tpcomm
