#include "plan/knobs.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include "kernels/layout/pull_ll_layout.h"  // kPullLLMaxCallBytes
#include "kernels/layout/wire_codec.h"      // WireCodec, kWireCodecs
#include "kernels/runtime/variant_table.h"

namespace tpcomm {
namespace {

// The knobs TPCOMM_KNOBS may set, by name.
struct Field {
  const char* name;
  int LaunchKnobs::*number;  // or
  bool LaunchKnobs::*flag;
};
constexpr Field kFields[] = {
    {"block_bytes", &LaunchKnobs::block_bytes, nullptr},
    {"host_block_bytes", &LaunchKnobs::host_block_bytes, nullptr},
    {"bulk_block_bytes", &LaunchKnobs::bulk_block_bytes, nullptr},
    {"oneshot_step_bytes", &LaunchKnobs::oneshot_step_bytes, nullptr},
    {"bulk_step_bytes", &LaunchKnobs::bulk_step_bytes, nullptr},
    {"max_threads", &LaunchKnobs::max_threads, nullptr},
    {"push_batch", &LaunchKnobs::push_batch, nullptr},
    {"push_eighths", &LaunchKnobs::push_eighths, nullptr},
    {"lean", nullptr, &LaunchKnobs::lean},
    {"host_sentinel", nullptr, &LaunchKnobs::host_sentinel},
    {"pull_ll_bytes", &LaunchKnobs::pull_ll_bytes, nullptr},
    {"host_ll_bytes", &LaunchKnobs::host_ll_bytes, nullptr},
    {"fused_cluster", nullptr, &LaunchKnobs::fused_cluster},
    {"fused_pull_ll", nullptr, &LaunchKnobs::fused_pull_ll},
    {"fused_twoshot_rows", &LaunchKnobs::fused_twoshot_rows, nullptr},
    {"fused_twoshot_push", nullptr, &LaunchKnobs::fused_twoshot_push},
    {"host_fence", &LaunchKnobs::host_fence, nullptr},
    {"pdl", nullptr, &LaunchKnobs::pdl},
    {"node_small_bytes", &LaunchKnobs::node_small_bytes, nullptr},
    {"wire_min_bytes", &LaunchKnobs::wire_min_bytes, nullptr},
};

// The codecs by WireCodec value (kernels/layout/wire_codec.h); "fp8" is e4m3.
constexpr const char* kWireNames[] = {"none", "int8", "int4", "fp8", "fp8_e5m2"};
static_assert(sizeof(kWireNames) / sizeof(kWireNames[0]) == kWireCodecs, "a name per codec");

// wire=<codec>.
std::string parseWire(const std::string& value, LaunchKnobs* k) {
  std::string known;
  for (int i = 0; i < kWireCodecs; ++i) {
    if (value == kWireNames[i] ||
        (i == static_cast<int>(WireCodec::kFp8E4M3) && value == "fp8_e4m3")) {
      k->wire = i;
      return "";
    }
    known += std::string(known.empty() ? "" : ", ") + kWireNames[i];
  }
  return "wire=" + value + ": not a codec (known: " + known + ", fp8_e4m3)";
}

// variant=<name>: a row of the variant table by its name, or auto.
std::string parseVariant(const std::string& value, LaunchKnobs* k) {
  if (value == "auto") {
    k->variant = -1;
    return "";
  }
  int rows = 0;
  const VariantRow* all = variantRows(&rows);
  std::string known = "auto";
  for (int i = 0; i < rows; ++i) {
    if (all[i].collective == VariantCollective::kNone &&
        all[i].transport == VariantTransport::kNone)
      continue;  // "none": nothing to run
    if (value == all[i].name) {
      k->variant = i;
      return "";
    }
    known += std::string(", ") + all[i].name;
  }
  return "variant=" + value + ": not a variant (known: " + known + ")";
}

std::string parseOne(const std::string& item, LaunchKnobs* k) {
  const size_t eq = item.find('=');
  if (eq == std::string::npos) return "\"" + item + "\" is not name=value";
  const std::string name = item.substr(0, eq);
  const std::string value = item.substr(eq + 1);
  if (name == "variant") return parseVariant(value, k);
  if (name == "wire") return parseWire(value, k);
  if (name == "epilogue_cluster")
    return "epilogue_cluster is gone: the epilogue kernel takes a block per row on every GPU (its "
           "cluster form measured slower: docs/BENCHMARKS.md, \"Launch knobs\")";
  if (name == "node_variant")
    return "node_variant is gone: node_small_bytes says it alone (node_small_bytes=0: every "
           "all-reduce across machines takes the large shape; =1073741824: the small one, up to "
           "1 GiB)";
  for (const Field& f : kFields) {
    if (name != f.name) continue;
    errno = 0;
    char* end = nullptr;
    const long v = strtol(value.c_str(), &end, 10);
    const bool number = !value.empty() && *end == '\0' && errno == 0 && v >= 0 && v <= (1L << 30);
    if (f.flag) {
      if (!number || v > 1) return name + "=" + value + ": expected 0 or 1";
      k->*f.flag = v == 1;
    } else {
      if (!number) return name + "=" + value + ": expected a whole number from 0 to 2^30";
      k->*f.number = static_cast<int>(v);
    }
    return "";
  }
  std::string known;
  for (const Field& f : kFields) known += std::string(known.empty() ? "" : ", ") + f.name;
  known += ", wire, variant";
  return "unknown knob \"" + name + "\" (known: " + known + ")";
}

}  // namespace

std::string parseLaunchKnobs(const std::string& spec, LaunchKnobs* k) {
  size_t pos = 0;
  while (pos <= spec.size() && !spec.empty()) {
    size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    const std::string why = parseOne(spec.substr(pos, end - pos), k);
    if (!why.empty()) return why;
    pos = end + 1;
  }
  return "";
}

std::string planKnobsText(const LaunchKnobs& k) {
  const LaunchKnobs d;
  std::string out;
  const auto add = [&out](const std::string& item) { out += (out.empty() ? "" : ",") + item; };
  for (const Field& f : kFields) {
    if (f.flag == &LaunchKnobs::pdl) continue;
    if (f.flag && k.*f.flag != d.*f.flag) add(std::string(f.name) + "=" + (k.*f.flag ? "1" : "0"));
    if (f.number && k.*f.number != d.*f.number)
      add(std::string(f.name) + "=" + std::to_string(k.*f.number));
  }
  if (k.variant != d.variant) {
    const VariantRow* r = variantRow(k.variant);
    add(std::string("variant=") + (r ? r->name : std::to_string(k.variant).c_str()));
  }
  if (k.wire != d.wire) {
    const char* name = wireCodecName(k.wire);
    add(std::string("wire=") + (name ? name : std::to_string(k.wire).c_str()));
  }
  return out;
}

const char* wireCodecName(int codec) {
  return codec >= 0 && codec < kWireCodecs ? kWireNames[codec] : nullptr;
}

std::string launchKnobsError(const LaunchKnobs& k, int threads_bound) {
  struct Check {
    const char* name;
    int value;
    bool ok;
    const char* expected;
  };
  const Check checks[] = {
      {"block_bytes", k.block_bytes, k.block_bytes >= 16, ">= 16"},
      {"host_block_bytes", k.host_block_bytes, k.host_block_bytes >= 16, ">= 16"},
      {"bulk_block_bytes", k.bulk_block_bytes, k.bulk_block_bytes >= 16, ">= 16"},
      {"oneshot_step_bytes", k.oneshot_step_bytes, k.oneshot_step_bytes >= 0,
       ">= 0 (0: a slot's region)"},
      {"bulk_step_bytes", k.bulk_step_bytes, k.bulk_step_bytes >= 0, ">= 0 (0: a whole slot)"},
      {"max_blocks", k.max_blocks, k.max_blocks >= 0 && k.max_blocks <= 1024, "0..1024"},
      {"max_threads", k.max_threads,
       k.max_threads >= 32 && k.max_threads <= threads_bound && k.max_threads % 32 == 0,
       "a multiple of 32 up to the kernels' launch bound"},
      {"push_batch", k.push_batch, k.push_batch >= 0 && k.push_batch <= 4, "0..4"},
      {"push_eighths", k.push_eighths, k.push_eighths >= 1 && k.push_eighths <= 7, "1..7"},
      {"pull_ll_bytes", k.pull_ll_bytes,
       k.pull_ll_bytes >= 0 && static_cast<size_t>(k.pull_ll_bytes) <= kPullLLMaxCallBytes,
       "0 (off) to 65536 (an LL slot)"},
      {"host_ll_bytes", k.host_ll_bytes, k.host_ll_bytes >= 0, ">= 0 (0: the pulled form always)"},
      {"host_fence", k.host_fence, k.host_fence >= 0 && k.host_fence <= 2,
       "0 (off), 1 (on) or 2 (auto: by the driver's PCIe Relaxed Ordering)"},
      {"variant", k.variant, k.variant == -1 || (k.variant > 0 && k.variant < tpcommNumVariants),
       "-1 (auto) or a tpcommVariant_t other than none"},
      {"wire", k.wire, wireCodecName(k.wire) != nullptr,
       "a codec: none, int8, int4, fp8, fp8_e5m2"},
  };
  for (const Check& c : checks)
    if (!c.ok)
      return std::string(c.name) + "=" + std::to_string(c.value) + " is out of range (expected " +
             c.expected + ")";
  return "";
}

bool hostFenceOn(int knob, const topo::PcieOrdering& ordering) {
  if (knob == kHostFenceOff) return false;
  if (knob == kHostFenceOn) return true;
  return ordering.state != topo::RelaxedOrdering::kOff;
}

}  // namespace tpcomm
