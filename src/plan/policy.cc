#include "plan/policy.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace tpcomm {
namespace {

constexpr size_t kInf = SIZE_MAX;
constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * KiB;

std::string fmtBytes(size_t b) {
  char buf[32];
  if (b == kInf) return "inf";
  if (b >= MiB && b % MiB == 0)
    snprintf(buf, sizeof(buf), "%zu MiB", b / MiB);
  else if (b >= KiB && b % KiB == 0)
    snprintf(buf, sizeof(buf), "%zu KiB", b / KiB);
  else
    snprintf(buf, sizeof(buf), "%zu B", b);
  return buf;
}

bool isP2pAlgo(int a) {
  return a == tpcommAlgoOneShot || a == tpcommAlgoTwoShot || isIslandAlgo(a) || isPullAlgo(a) ||
         a == tpcommAlgoOneShotCe;
}

bool writeCollapse(const PolicyInput& in) {
  return in.fabric == Fabric::kPcie && in.fabric_verdict == FabricVerdict::kWriteCollapse;
}

// Why algorithm a cannot serve this call, or "" if it can. A forced island needs no islands in
// the topology: the communicator then splits the ranks into halves (comm/lifecycle/fabric.cc).
std::string unavailable(const PolicyInput& in, int a, bool forced) {
  if (isP2pAlgo(a) && in.fabric == Fabric::kHost)
    return "peer-to-peer memory access does not work between these GPUs";
  if (isHostAlgo(a) && !in.host_transport)
    return "the host-memory transport is not set up (it is used when P2P does not work, with "
           "TPCOMM_TRANSPORT=host, or when a host algorithm is forced at init)";
  if (a == tpcommAlgoOneShotCe && !in.ce_staging)
    return "its copy-engine landing slots exist only when oneshot_ce is forced at init "
           "(TPCOMM_ALGO / config.algo)";
  if (isForcedOnlyAlgo(a) && !forced) return "a forced-only algorithm (auto never picks it)";
  if (a == tpcommAlgoNccl && !in.nccl_available)
    return "no NCCL communicator (libnccl not found, TPCOMM_NCCL=off, or ranks share a GPU)";
  if (isIslandAlgo(a) && !islandWorld(in.world))
    return "world " + std::to_string(in.world) + ": " + tpcommAlgoName(a) +
           " needs an even world of at least 4 (two islands of at least 2 ranks)";
  if (isIslandAlgo(a) && !forced && !in.two_islands)
    return "the GPUs do not form two equal islands";
  return "";
}

int lookup(const SizeTable& t, size_t bytes) {
  for (const SizeRule& r : t)
    if (bytes <= r.max_bytes) return r.algo;
  return t.empty() ? tpcommAlgoTwoShot : t.back().algo;
}

// The tpcomm algorithm that can always serve a call on this fabric (chunked two-shot; over host
// memory the bulk one-shot at two ranks, where each rank reads one peer, and the host two-shot
// from three, whose pulled form reads 2(n-1)/n of the message where bulk reads n-1 times it;
// where stores collapse, the two-shot pull).
int bandwidthAlgo(const PolicyInput& in) {
  if (in.fabric == Fabric::kHost) return in.world <= 2 ? tpcommAlgoHostBulk : tpcommAlgoHostTwoShot;
  if (writeCollapse(in)) return tpcommAlgoTwoShotPull;
  return tpcommAlgoTwoShot;
}

}  // namespace

// The built-in tables: measured on 2x H200 (NVLink, and host memory with P2P unused) against
// NCCL; larger worlds, PCIe and the island rows are estimates from bytes moved per GPU. Numbers
// and reasoning: docs/BENCHMARKS.md, "Launch knobs and the built-in policy tables". `tpcomm tune`
// replaces them per machine.
const SizeTable& defaultTable(Fabric fabric, int world, bool two_islands, FabricVerdict verdict) {
  static const SizeTable nvlink2 = {{kInf, tpcommAlgoOneShot}};
  static const SizeTable nvlinkN = {{256 * KiB, tpcommAlgoOneShot}, {kInf, tpcommAlgoTwoShot}};
  static const SizeTable pcie2 = {{256 * KiB, tpcommAlgoOneShot}, {kInf, tpcommAlgoTwoShot}};
  static const SizeTable pcieN = {{64 * KiB, tpcommAlgoOneShot}, {kInf, tpcommAlgoTwoShot}};
  static const SizeTable pcieIslands = {
      {64 * KiB, tpcommAlgoOneShot}, {1 * MiB, tpcommAlgoTwoShot}, {kInf, tpcommAlgoIsland}};
  // Over host memory from 3 ranks, the host two-shot (LL up to the knob host_ll_bytes, pulled
  // above) where host_bulk ran: bulk reads every peer's whole message, the two-shot 2(n-1)/n of
  // it, and it measured ahead of bulk (or level) at every size from 64 KiB on 4 and 8 ranks
  // sharing one H200 (docs/BENCHMARKS.md, "The host two-shot's pulled form"). NCCL's ring reads
  // as much as the pulled two-shot: its rows stay estimates.
  static const SizeTable host2 = {{512 * KiB, tpcommAlgoHostOneShot}, {kInf, tpcommAlgoHostBulk}};
  static const SizeTable host4 = {
      {64 * KiB, tpcommAlgoHostOneShot}, {4 * MiB, tpcommAlgoHostTwoShot}, {kInf, tpcommAlgoNccl}};
  static const SizeTable host8 = {
      {64 * KiB, tpcommAlgoHostOneShot}, {1 * MiB, tpcommAlgoHostTwoShot}, {kInf, tpcommAlgoNccl}};
  // Stores collapse, loads hold: pull, and NCCL from where its 37-41 GB/s bus bandwidth beats
  // two-shot pull's reads at the ~27 GB/s loads ran (about 1 MiB at 8 ranks; estimates until
  // `tpcomm tune` measures such a box). With two real islands (two sockets), island_pull where
  // the push island would run: only partial sums cross the socket link, and every leg reads.
  static const SizeTable pcieCollapse2 = {{256 * KiB, tpcommAlgoOneShotPull},
                                          {kInf, tpcommAlgoTwoShotPull}};
  static const SizeTable pcieCollapseN = {
      {32 * KiB, tpcommAlgoOneShotPull}, {1 * MiB, tpcommAlgoTwoShotPull}, {kInf, tpcommAlgoNccl}};
  static const SizeTable pcieCollapseIslands = {{32 * KiB, tpcommAlgoOneShotPull},
                                                {1 * MiB, tpcommAlgoTwoShotPull},
                                                {kInf, tpcommAlgoIslandPull}};
  switch (fabric) {
    case Fabric::kNvlink:
      return world <= 2 ? nvlink2 : nvlinkN;
    case Fabric::kPcie:
      if (verdict == FabricVerdict::kWriteCollapse) {
        if (two_islands && islandWorld(world) && world >= 6) return pcieCollapseIslands;
        return world <= 2 ? pcieCollapse2 : pcieCollapseN;
      }
      if (two_islands && islandWorld(world) && world >= 6) return pcieIslands;
      return world <= 2 ? pcie2 : pcieN;
    case Fabric::kHost:
      return world <= 2 ? host2 : world <= 4 ? host4 : host8;
  }
  return nvlinkN;
}

Decision choose(const PolicyInput& in) {
  Decision d;
  if (in.forced_algo > tpcommAlgoAuto) {
    const char* name = tpcommAlgoName(in.forced_algo);  // unknown here: not this library's
    if (!name) {
      d.error = tpcommInvalidArgument;
      d.reason = "forced algorithm " + std::to_string(in.forced_algo) + " is not a tpcommAlgo_t";
      return d;
    }
    const std::string why = unavailable(in, in.forced_algo, /*forced=*/true);
    if (!why.empty()) {
      d.error = tpcommUnsupported;
      d.reason = std::string("forced algorithm ") + name + " cannot run: " + why;
      return d;
    }
    d.algo = in.forced_algo;
    d.reason = std::string("forced (TPCOMM_ALGO / config.algo = ") + name + ")";
    if (isForcedOnlyAlgo(in.forced_algo))
      d.reason += "; forced only: auto never picks it until a measurement says it wins";
    return d;
  }

  const SizeTable& table =
      in.tuned ? *in.tuned : defaultTable(in.fabric, in.world, in.two_islands, in.fabric_verdict);
  const char* source = in.tuned ? "tuning table" : "default table";
  int a = lookup(table, in.bytes);
  // The verdict is named wherever the probe gave one over PCIe (the only fabric it steers).
  const std::string verdict =
      in.fabric == Fabric::kPcie && in.fabric_verdict != FabricVerdict::kUnknown
          ? std::string(" (fabric probe: ") + fabricVerdictName(in.fabric_verdict) + ")"
          : "";
  d.reason = std::string(source) + " for " + fabricName(in.fabric) + verdict + ", world " +
             std::to_string(in.world) + ", " + fmtBytes(in.bytes);
  std::string why = unavailable(in, a, /*forced=*/false);
  if (!why.empty() && a != tpcommAlgoNccl) {
    const int b = bandwidthAlgo(in);
    d.reason += std::string(": ") + tpcommAlgoName(a) + " unavailable (" + why + "), using " +
                tpcommAlgoName(b);
    a = b;
    why = unavailable(in, a, /*forced=*/false);
  }
  // A tuning table's NCCL rows were measured on this machine; the built-in tables' are all
  // estimates (none of their NCCL rows has a measurement behind it), and the reason says which.
  const std::string nccl_faster = in.tuned ? "NCCL measured faster" : "NCCL estimated faster";
  if (a == tpcommAlgoNccl) {
    if (!in.nccl_available) {
      const int b = bandwidthAlgo(in);  // not NCCL: it checks nccl_available
      d.reason += ": " + nccl_faster + " but " + unavailable(in, a, /*forced=*/false) + ", using " +
                  tpcommAlgoName(b);
      a = b;
      why = unavailable(in, a, /*forced=*/false);
    } else {
      d.fallback = true;
      d.reason += a == lookup(table, in.bytes) ? ": " + nccl_faster + " here"
                                               : " (SM pushes collapse on this fabric)";
      if (in.strict) {
        d.error = tpcommFallbackRefused;
        d.reason += " (refused: TPCOMM_STRICT=1)";
        return d;
      }
    }
  }
  if (writeCollapse(in) && !isPullAlgo(a) && a != tpcommAlgoNccl && in.tuned == nullptr)
    d.reason += " although SM stores collapse on this fabric (no pull kernels, no NCCL)";
  if (!why.empty()) {
    d.error = tpcommUnsupported;
    d.reason += std::string(": ") + tpcommAlgoName(a) + " cannot run: " + why;
    return d;
  }
  d.algo = a;
  d.reason = std::string(tpcommAlgoName(a)) + " by " + d.reason;
  return d;
}

}  // namespace tpcomm
