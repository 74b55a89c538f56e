// `tpcomm doctor`'s policy preview: what the planner (src/plan/planner.h planCall, the function
// every call goes through) would choose for a range of message sizes and world sizes on this
// machine, and why, with the communicator's facts derived by the library's own rules
// (fabricForTransport, needsHostTransport, autoIsland). Pure (topology and options in, plans out)
// and header-only, so the CPU tests check it on the topology fixtures without a GPU.
#pragma once

#include <string>
#include <vector>

#include "comm/lifecycle/config.h"
#include "kernels/layout/device_comm.h"
#include "kernels/runtime/algo_launch.h"
#include "plan/planner.h"
#include "plan/tuning_table.h"
#include "topo/classify.h"
#include "topo/topology.h"

namespace tpcomm::cli {

// What a communicator created here would know, besides the topology.
struct PreviewOptions {
  bool nccl_available = false;  // libnccl loads and TPCOMM_NCCL is not off
  // The library sets up its host-memory transport where a communicator needs it (no working
  // P2P, TPCOMM_TRANSPORT=host, or a host algorithm forced: the planner's
  // needsHostTransport).
  bool host_transport = true;
  int transport = 0;                    // TPCOMM_TRANSPORT: 0 auto, 1 p2p, 2 host
  int forced_algo = -1;                 // TPCOMM_ALGO (-1: auto)
  bool strict = false;                  // TPCOMM_STRICT
  const TuningTable* tuning = nullptr;  // the table loaded for this machine, if any
  FabricVerdict fabric_verdict = FabricVerdict::kUnknown;  // the probe's, as init would agree it
};

struct PreviewRow {
  size_t bytes = 0;
  Decision decision;
  tpcommVariant_t variant = tpcommVariantNone;  // with 16-byte aligned buffers
};

// The fused all-reduce + add + RMSNorm (tpcommAllReduceAddRmsNorm, what the engines' fusion passes
// call) at a few token counts of one row width: the all-reduce of the same bytes and the kernel
// that runs the call (a fused variant, or the epilogue kernel after the all-reduce).
struct PreviewFused {
  size_t tokens = 0;
  tpcommResult_t error = tpcommSuccess;
  tpcommVariant_t allreduce = tpcommVariantNone;
  tpcommVariant_t variant = tpcommVariantNone;
  std::string reason;
};
constexpr size_t kPreviewHidden = 7168;  // bf16 rows: DeepSeek-V3's and Kimi K2's width

struct PreviewWorld {
  int world = 0;
  std::vector<int> gpus;  // rank r runs on GPU gpus[r]; empty for a hypothetical machine
  Fabric fabric = Fabric::kNvlink;
  bool two_islands = false;
  std::string fabric_reason;
  std::string error;   // set when a communicator could not even be created (rows then empty)
  bool tuned = false;  // the tuning table steers this world
  std::string table;   // "built-in defaults", "tuning table", or why the table is not used
  std::vector<PreviewRow> rows;
  std::vector<PreviewFused> fused;
};

// 1 KiB .. 64 MiB in x4 steps (9 sizes): decode-sized messages up to prefill-sized ones.
inline std::vector<size_t> previewSizes() {
  std::vector<size_t> s;
  for (size_t b = 1024; b <= (size_t{64} << 20); b *= 4) s.push_back(b);
  return s;
}

// 1 .. 1024 tokens: decode steps up to a prefill chunk.
inline std::vector<size_t> previewTokens() {
  return {1, 16, 64, 256, 1024};
}

// What a world's tuning table says of the fused call (tpcomm tune), as " (fused calls: ...)", or
// "" where it says nothing.
inline std::string tunedFusedText(const WorldTable& t) {
  std::string s;
  const auto rows = [](size_t n) { return std::to_string(n) + " rows"; };
  if (t.fused_unfused_below == SIZE_MAX)
    s = "unfused at every row count";
  else if (t.fused_unfused_below > 0)
    s = "unfused below " + rows(t.fused_unfused_below);
  if (t.fused_twoshot_rows == SIZE_MAX)
    s += std::string(s.empty() ? "" : ", ") + "the one-shot within a step";
  else if (t.fused_twoshot_rows > 0)
    s += std::string(s.empty() ? "" : ", ") + "the two-shot from " + rows(t.fused_twoshot_rows);
  return s.empty() ? "" : " (fused calls: " + s + ", measured)";
}

// What a world's tuning table says of the quantized wire's codecs (wire_from), as " (the wire:
// int8 from N bytes, int4 never, measured)", or "" where it says nothing. It opts nothing in:
// only a communicator that asks for a codec (wire=, TPCOMM_WIRE) takes it, from there.
inline std::string tunedWireText(const WorldTable& t) {
  std::string s;
  for (int c = 1; c < kWireCodecs; ++c) {
    const size_t from = t.wire_from[c];
    if (from == 0) continue;
    s += std::string(s.empty() ? "" : ", ") + wireCodecName(c) +
         (from == SIZE_MAX ? " never" : " from " + std::to_string(from) + " bytes");
  }
  return s.empty() ? "" : " (the wire: " + s + ", measured)";
}

// Decisions for every preview size and fused call, given the fabric facts of one world.
inline void fillRows(PreviewWorld* w, const PreviewOptions& o) {
  const WorldTable* tuned = nullptr;
  if (o.tuning) {
    tuned = o.tuning->worldFor(w->world, w->fabric);
    if (tuned) {
      w->table = "tuning table";
      w->table += tunedFusedText(*tuned) + tunedWireText(*tuned);
    } else if (o.tuning->tableFor(w->world)) {
      w->table = std::string("built-in defaults (the tuning table was measured on ") +
                 fabricName(o.tuning->fabric) + ", these ranks use " + fabricName(w->fabric) + ")";
    } else {
      w->table =
          "built-in defaults (the tuning table has no world " + std::to_string(w->world) + ")";
    }
  } else {
    w->table = "built-in defaults";
  }
  w->tuned = tuned != nullptr;
  CommFacts f;
  f.world = w->world;
  f.fabric = w->fabric;
  f.two_islands = autoIsland(w->two_islands, w->fabric);
  f.nccl_available = o.nccl_available;
  f.host_transport = o.host_transport && needsHostTransport(w->world, w->fabric, o.forced_algo);
  f.forced_algo = o.forced_algo;
  f.strict = o.strict;
  takeTuned(tuned, &f);
  f.fabric_verdict = o.fabric_verdict;
  // The default slots (TPCOMM_BUFFER_BYTES is not previewed), laid out as init does.
  const Settings defaults;
  DeviceComm d{};
  d.world = w->world;
  d.slot_bytes = defaults.slot_bytes;
  if (f.host_transport) {
    d.host_slot_bytes = defaults.host_slot_bytes;
    d.out_slot_bytes = bulkSlotBytes(defaults.host_slot_bytes);
    d.hs_slot_bytes = kHostSentinelSlotBytes;
  }
  f.slots = slotCapacity(d);
  for (size_t bytes : previewSizes()) {
    const CallPlan p = planCall(f, Call{bytes, true});
    w->rows.push_back({bytes, p.decision, p.variant});
  }
  for (size_t tokens : previewTokens()) {
    const CallPlan p = planCall(f, fusedCall(tokens, kPreviewHidden, tpcommBfloat16, false));
    w->fused.push_back(
        {tokens, p.decision.error, p.variant, p.epilogue.variant, p.epilogue.reason});
  }
}

// One world on a real (or fixture) topology: rank r on GPU rank_gpu[r].
inline PreviewWorld previewWorld(const topo::Topology& topo, const std::vector<int>& rank_gpu,
                                 const PreviewOptions& o) {
  PreviewWorld w;
  w.world = static_cast<int>(rank_gpu.size());
  w.gpus = rank_gpu;
  topo::Classification c;
  if (topo::classify(topo, rank_gpu, &c) != tpcommSuccess) {
    w.error = "the ranks' GPUs are not in the topology";
    return w;
  }
  w.fabric = c.fabric;
  w.two_islands = c.two_islands;
  w.fabric_reason = c.reason;
  // TPCOMM_TRANSPORT, by the rule comm/lifecycle/fabric.cc applies.
  if (!fabricForTransport(o.transport, c.fabric, &w.fabric)) {
    w.error = "TPCOMM_TRANSPORT=p2p, but " + c.reason + ": communicator init fails";
    return w;
  }
  if (w.fabric != c.fabric) {
    w.two_islands = false;
    w.fabric_reason += "; TPCOMM_TRANSPORT=host forces host memory";
  }
  fillRows(&w, o);
  return w;
}

// Worlds 2..min(N, kMaxRanks) on GPUs 0..world-1 of the topology.
inline std::vector<PreviewWorld> previewMachine(const topo::Topology& topo,
                                                const PreviewOptions& o) {
  std::vector<PreviewWorld> out;
  std::vector<int> gpus;
  for (int g = 0; g < topo.size() && g < kMaxRanks; ++g) {
    gpus.push_back(g);
    if (gpus.size() >= 2) out.push_back(previewWorld(topo, gpus, o));
  }
  return out;
}

// No topology (no GPU, or one): every fabric, worlds 2..8, built-in defaults (a tuning table
// belongs to a machine, and there is none).
inline std::vector<PreviewWorld> previewHypothetical(const PreviewOptions& o) {
  PreviewOptions opts = o;
  opts.tuning = nullptr;
  std::vector<PreviewWorld> out;
  for (Fabric f : {Fabric::kNvlink, Fabric::kPcie, Fabric::kHost}) {
    for (int world = 2; world <= kMaxRanks; ++world) {
      PreviewWorld w;
      w.world = world;
      w.fabric = f;
      w.fabric_reason = std::string("hypothetical ") + fabricName(f) + " machine";
      // TPCOMM_TRANSPORT narrows the fabrics a communicator could have.
      if ((opts.transport == 2 && f != Fabric::kHost) ||
          (opts.transport == 1 && f == Fabric::kHost))
        continue;
      fillRows(&w, opts);
      out.push_back(std::move(w));
    }
  }
  return out;
}

// Previewed calls the policy would refuse (tpcommUnsupported / tpcommFallbackRefused) plus
// worlds that could not be set up; the first reason in *first.
inline int previewFailures(const std::vector<PreviewWorld>& worlds, std::string* first) {
  int n = 0;
  for (const PreviewWorld& w : worlds) {
    if (!w.error.empty()) {
      if (n++ == 0 && first) *first = "world " + std::to_string(w.world) + ": " + w.error;
      continue;
    }
    for (const PreviewRow& r : w.rows)
      if (r.decision.error != tpcommSuccess && n++ == 0 && first)
        *first = "world " + std::to_string(w.world) + ": " + r.decision.reason;
  }
  return n;
}

}  // namespace tpcomm::cli
