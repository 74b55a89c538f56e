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
  return a == tpcommAlgoOneShot || a == tpcommAlgoTwoShot || a == tpcommAlgoIsland;
}

// Why algorithm a cannot serve this call, or "" if it can. A forced island needs no islands in
// the topology: the communicator then splits the ranks into halves (comm/fabric.cc).
std::string unavailable(const PolicyInput& in, int a, bool forced) {
  if (isP2pAlgo(a) && in.fabric == Fabric::kHost)
    return "peer-to-peer memory access does not work between these GPUs";
  if (isHostAlgo(a) && !in.host_transport)
    return "the host-memory transport is not set up (it is used when P2P does not work, with "
           "TPCOMM_TRANSPORT=host, or when a host algorithm is forced at init)";
  if (a == tpcommAlgoNccl && !in.nccl_available)
    return "no NCCL communicator (libnccl not found, TPCOMM_NCCL=off, or ranks share a GPU)";
  if (a == tpcommAlgoIsland && !islandWorld(in.world))
    return "world " + std::to_string(in.world) +
           ": island needs an even world of at least 4 (two islands of at least 2 ranks)";
  if (a == tpcommAlgoIsland && !forced && !in.two_islands)
    return "the GPUs do not form two equal islands";
  return "";
}

int lookup(const SizeTable& t, size_t bytes) {
  for (const SizeRule& r : t)
    if (bytes <= r.max_bytes) return r.algo;
  return t.empty() ? tpcommAlgoTwoShot : t.back().algo;
}

// The tpcomm algorithm that can always serve a call on this fabric (chunked two-shot; over host
// memory the bulk one-shot, faster than the LL two-shot at every size measured).
int bandwidthAlgo(Fabric f) {
  return f == Fabric::kHost ? tpcommAlgoHostBulk : tpcommAlgoTwoShot;
}

}  // namespace

bool islandWorld(int world) {
  return world >= 4 && world % 2 == 0;
}

const char* fabricName(Fabric f) {
  switch (f) {
    case Fabric::kNvlink:
      return "nvlink";
    case Fabric::kPcie:
      return "pcie";
    case Fabric::kHost:
      return "host";
  }
  return "?";
}

// Defaults, measured on 2x H200 NVLink, bf16, CUDA graphs (docs/BENCHMARKS.md, 2026-11-30):
// world 2: one-shot at every size. Up to 1 MiB a call is one step (the lean kernel: 5.2 us at
// 1 MiB vs two-shot 7.1); above it goes in 1 MiB steps with pushing and reducing warps side by
// side (one wait per step; plan/grid.h), and that beat two-shot in every same-run comparison of
// the sixth round: 9.7 vs 10.4 us at 2 MiB, 15.8-15.9 vs 16.4 at 4 MiB, 28.1-28.3 vs 28.9 at
// 8 MiB, 53.5-54.1 vs 58.8 at 16 MiB, 95.8 vs 118 at 32 MiB, 188.5 vs 235 at 64 MiB. Worlds 3..8
// were measured with ranks sharing GPUs only (correctness, not speed): one-shot moves (world-1)x
// the bytes, so two-shot takes over earlier. PCIe: posted writes but much less bandwidth, so
// two-shot earlier still. Host: the host-memory kernels up to where NCCL's own host path
// (NCCL_P2P_DISABLE=1) is not slower (below). `tpcomm tune` replaces these per machine.
//
// Two islands (ESTIMATE, not measured: no two-socket PCIe box yet): the island algorithm sends
// one fp32 partial per vector across the islands each way, two-shot m/2 vectors (m = world/2),
// so with 16-bit data it moves less across the slow link from m = 3 on (world 6: 2/3, world 8:
// 1/2), at the price of a third wait per step. So: one-shot and two-shot as without islands up
// to 1 MiB (latency), island above, for worlds 6 and 8. Replace with `tpcomm tune` results.
const SizeTable& defaultTable(Fabric fabric, int world, bool two_islands) {
  static const SizeTable nvlink2 = {{kInf, tpcommAlgoOneShot}};
  static const SizeTable nvlinkN = {{256 * KiB, tpcommAlgoOneShot}, {kInf, tpcommAlgoTwoShot}};
  static const SizeTable pcie2 = {{256 * KiB, tpcommAlgoOneShot}, {kInf, tpcommAlgoTwoShot}};
  static const SizeTable pcieN = {{64 * KiB, tpcommAlgoOneShot}, {kInf, tpcommAlgoTwoShot}};
  static const SizeTable pcieIslands = {
      {64 * KiB, tpcommAlgoOneShot}, {1 * MiB, tpcommAlgoTwoShot}, {kInf, tpcommAlgoIsland}};
  // Host memory, 2x H200 with P2P unused, against NCCL with NCCL_P2P_DISABLE=1: the one-shot
  // with the sentinel protocol (HostSentinelProto; every call up to 512 KiB at world 2 fits its
  // one step) wins up to 512 KiB (us, host_oneshot / bulk / NCCL: 3.1 / 8.7 / 12.5 at 16 KiB,
  // 5.3 / 11.5 / 17.2 at 64 KiB, 7.5 / 16.5 / 23.5 at 128 KiB, 12.8 / 20.9 / 37.4 at 256 KiB,
  // 25.6 / 31.1 / 47.2 at 512 KiB), then bulk (50.0 / 62.4 at 1 MiB, where host_oneshot takes
  // LL packets and 79 us; 1687 / 2341 at 64 MiB). Bulk makes every rank read every peer's data, so
  // at larger worlds NCCL's ring through host memory moves less per GPU (ESTIMATE, no larger box
  // measured: bulk reads (world-1)x the message, a ring ~2x): the one-shot up to 64 KiB as before
  // (sentinel protocol: a source's region is 256 KiB at world 4, 128 KiB at world 8), then bulk
  // up to 4 MiB at worlds 3-4 and up to 1 MiB from 5 on, NCCL above. `tpcomm tune` replaces these
  // per machine.
  static const SizeTable host2 = {{512 * KiB, tpcommAlgoHostOneShot}, {kInf, tpcommAlgoHostBulk}};
  static const SizeTable host4 = {
      {64 * KiB, tpcommAlgoHostOneShot}, {4 * MiB, tpcommAlgoHostBulk}, {kInf, tpcommAlgoNccl}};
  static const SizeTable host8 = {
      {64 * KiB, tpcommAlgoHostOneShot}, {1 * MiB, tpcommAlgoHostBulk}, {kInf, tpcommAlgoNccl}};
  switch (fabric) {
    case Fabric::kNvlink:
      return world <= 2 ? nvlink2 : nvlinkN;
    case Fabric::kPcie:
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
    const char* name = tpcommAlgoName(in.forced_algo);
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
    return d;
  }

  const SizeTable& table = in.tuned ? *in.tuned : defaultTable(in.fabric, in.world, in.two_islands);
  const char* source = in.tuned ? "tuning table" : "default table";
  int a = lookup(table, in.bytes);
  d.reason = std::string(source) + " for " + fabricName(in.fabric) + ", world " +
             std::to_string(in.world) + ", " + fmtBytes(in.bytes);
  std::string why = unavailable(in, a, /*forced=*/false);
  if (!why.empty() && a != tpcommAlgoNccl) {
    const int b = bandwidthAlgo(in.fabric);
    d.reason += std::string(": ") + tpcommAlgoName(a) + " unavailable (" + why + "), using " +
                tpcommAlgoName(b);
    a = b;
    why = unavailable(in, a, /*forced=*/false);
  }
  if (a == tpcommAlgoNccl) {
    if (!in.nccl_available) {
      const int b = bandwidthAlgo(in.fabric);
      d.reason += std::string(": NCCL measured faster but ") +
                  unavailable(in, a, /*forced=*/false) + ", using " + tpcommAlgoName(b);
      a = b;
      why = unavailable(in, a, /*forced=*/false);
    } else {
      d.fallback = true;
      d.reason += ": NCCL measured faster here";
      if (in.strict) {
        d.error = tpcommFallbackRefused;
        d.reason += " (refused: TPCOMM_STRICT=1)";
        return d;
      }
    }
  }
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
