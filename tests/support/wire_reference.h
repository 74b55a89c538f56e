// The host emulation of the quantized wire's two-shot (src/kernels/twoshot_pull_wire.cu, pull
// over peer or host memory; src/kernels/twoshot_wire.cu, push), for the GPU tests (test_wire.cc,
// test_chains.cc): the same codec (kernels/layout/wire_codec.h) and the same arithmetic, so a
// kernel's output must equal it bit for bit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/layout/device_comm.h"
#include "kernels/layout/wire_codec.h"
#include "tests/support/host_data.h"

namespace tpcomm::test {

// The three forms of the wire's two-shot, by the slot each steps through.
enum class WireForm { kPull, kPush, kHost };

// The codec of a wire variant's name (p2p_twoshot_pull_<codec>, p2p_twoshot_<codec>,
// host_twoshot_<codec>) and its form (if form is not null), kNone for any other name.
inline WireCodec wireCodecOfVariant(const std::string& name, WireForm* form = nullptr) {
  const struct {
    const char* prefix;
    WireForm form;
  } kForms[] = {{"p2p_twoshot_pull_", WireForm::kPull},
                {"p2p_twoshot_", WireForm::kPush},
                {"host_twoshot_", WireForm::kHost}};
  for (const auto& f : kForms) {
    const std::string prefix = f.prefix;
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string codec = name.substr(prefix.size());
    const WireCodec c = codec == "int8"       ? WireCodec::kInt8
                        : codec == "int4"     ? WireCodec::kInt4
                        : codec == "fp8"      ? WireCodec::kFp8E4M3
                        : codec == "fp8_e5m2" ? WireCodec::kFp8E5M2
                                              : WireCodec::kNone;
    if (c != WireCodec::kNone && form) *form = f.form;
    if (c != WireCodec::kNone) return c;
  }
  return WireCodec::kNone;
}

// One element through the codec in a group of scale word `scale`.
inline float wireRoundTrip(WireCodec c, float x, float scale) {
  const WireScale s = wireScale(c, scale);
  return wireDecode(c, wireEncode(c, x, s), s);
}

inline float asFloat(tpcommDataType_t dt, const uint8_t* p) {
  return static_cast<float>(toDouble(dt, p));
}
// fp32 to the datatype, round to nearest even (the kernels' floatToBits), and back.
inline float roundTo(tpcommDataType_t dt, float x) {
  uint8_t b[4];
  fromDouble(dt, x, b);
  return asFloat(dt, b);
}

// The slot layout of a form on communicators of TPCOMM_BUFFER_BYTES buffer_bytes (a multiple of
// 1 KiB, as the tests use): the pull outbox (a quarter of the slot, world + 1 areas), the push slot
// (2 * world areas), the host bulk outbox (a quarter of the host inbox slot, itself a quarter of
// the slot and at least 64 KiB; world + 1 areas). comm/lifecycle/config.cc and device_comm.h
// size them.
inline WireSlot wireFormSlot(WireCodec c, WireForm form, size_t buffer_bytes, int world) {
  switch (form) {
    case WireForm::kPush:
      return wireSlot(c, buffer_bytes / 256 * 256, 2 * world);
    case WireForm::kHost:
      return wireSlot(c, bulkSlotBytes(std::max<size_t>(64u << 10, buffer_bytes / 4 / 1024 * 1024)),
                      world + 1);
    case WireForm::kPull:
      break;
  }
  return wireSlot(c, pullSlotBytes(buffer_bytes), world + 1);
}

// The kernel's output for world ranks' inputs (in[r]: count elements of dt) on communicators of
// TPCOMM_BUFFER_BYTES buffer_bytes, in a form: the owner of each group (the chunk layout of the
// codec's slot) adds its own input exact, the others' decoded, in rank order in fp32; the sum
// rounded to the datatype, encoded once, decoded. owner (if not null): each group's owning rank.
inline std::vector<float> emulateWire(WireCodec c, tpcommDataType_t dt, size_t count, int world,
                                      size_t buffer_bytes,
                                      const std::vector<std::vector<uint8_t>>& in,
                                      std::vector<int>* owner = nullptr,
                                      WireForm form = WireForm::kPull) {
  const size_t es = elemSize(dt), groups = (count + kWireGroup - 1) / kWireGroup;
  const WireSlot w = wireFormSlot(c, form, buffer_bytes, world);
  const size_t chunk = w.seg_cap * static_cast<size_t>(world);
  std::vector<float> out(count);
  if (owner) owner->assign(groups, 0);
  for (size_t g = 0; g < groups; ++g) {
    const size_t base = g / chunk * chunk, len = std::min(chunk, groups - base);
    const size_t seg = (len + world - 1) / world;
    const int own = static_cast<int>((g - base) / seg);
    if (owner) (*owner)[g] = own;
    float acc[kWireGroup] = {};
    for (int r = 0; r < world; ++r) {
      float x[kWireGroup] = {};
      for (int i = 0; i < kWireGroup; ++i) {
        const size_t e = g * kWireGroup + i;
        if (e < count) x[i] = asFloat(dt, in[r].data() + e * es);
      }
      const float scale = wireScaleOf(x, kWireGroup);
      for (int i = 0; i < kWireGroup; ++i) {
        const float v = r == own ? x[i] : wireRoundTrip(c, x[i], scale);
        acc[i] = r == 0 ? v : acc[i] + v;
      }
    }
    for (float& a : acc) a = roundTo(dt, a);
    const float scale = wireScaleOf(acc, kWireGroup);
    for (int i = 0; i < kWireGroup; ++i) {
      const size_t e = g * kWireGroup + i;
      if (e < count) out[e] = roundTo(dt, wireRoundTrip(c, acc[i], scale));
    }
  }
  return out;
}

}  // namespace tpcomm::test
