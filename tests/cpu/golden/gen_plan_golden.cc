// Generator of tests/cpu/data/plan_golden.txt: the decisions of the call path as it was before the
// planner (src/comm/allreduce.cc + src/kernels/launch.cu at commit 9c896c8), over a grid of
// communicator facts and calls. Run ONCE against that code; test_plan_golden.cc compares the
// planner with the file. It does not build against the planner (it mirrors the old static helpers
// of allreduce.cc), so it stays in git history only:
//   g++ -std=c++17 -Isrc -Iinclude -I/usr/local/cuda/include tests/cpu/golden/gen_plan_golden.cc
//     build-dev/src/libtpcomm_static.a -L/usr/local/cuda/lib64 -lcudart_static -ldl -lpthread -lrt
//   ./a.out > tests/cpu/data/plan_golden.txt
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/algo_launch.h"
#include "kernels/device_comm.h"
#include "plan/grid.h"
#include "plan/policy.h"

using namespace tpcomm;

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

uint64_t fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The knob strings the planner's TPCOMM_KNOBS parser takes, applied to the old LaunchKnobs.
void applyKnobs(const std::string& spec, LaunchKnobs* k) {
  size_t pos = 0;
  while (pos < spec.size() && spec != "-") {
    size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    const std::string kv = spec.substr(pos, end - pos);
    const size_t eq = kv.find('=');
    const std::string key = kv.substr(0, eq);
    const int v = atoi(kv.substr(eq + 1).c_str());
    if (key == "block_bytes")
      k->block_bytes = v;
    else if (key == "host_block_bytes")
      k->host_block_bytes = v;
    else if (key == "bulk_block_bytes")
      k->bulk_block_bytes = v;
    else if (key == "oneshot_step_bytes")
      k->oneshot_step_bytes = v;
    else if (key == "bulk_step_bytes")
      k->bulk_step_bytes = v;
    else if (key == "max_threads")
      k->max_threads = v;
    else if (key == "push_batch")
      k->push_batch = v;
    else if (key == "push_eighths")
      k->push_eighths = v;
    else if (key == "lean")
      k->lean = v != 0;
    else if (key == "host_sentinel")
      k->host_sentinel = v != 0;
    else
      abort();
    pos = end + 1;
  }
}

struct Comm {  // the fields of the old tpcommComm the call path read
  int world;
  Fabric fabric;
  bool two_islands, nccl, host_transport;
  int forced;
  bool strict;
  const SizeTable* tuned;
  LaunchKnobs knobs;
  DeviceComm dev;
  size_t oneshot_step_bytes, chunk_vecs, island_chunk_vecs, host_step_bytes,
      host_sentinel_step_bytes, host_chunk_vecs, bulk_step_bytes;
};

// allreduce.cc's helpers, verbatim in behaviour.
size_t stepBytes(int knob_bytes, size_t full) {
  const size_t knob = static_cast<size_t>(knob_bytes) / kVecBytes * kVecBytes;
  return knob > 0 ? std::min(knob, full) : full;
}
size_t chunkOf(const Comm& c, int algo) {
  switch (algo) {
    case tpcommAlgoOneShot:
      return stepBytes(c.knobs.oneshot_step_bytes, c.oneshot_step_bytes) / kVecBytes;
    case tpcommAlgoTwoShot:
      return c.chunk_vecs;
    case tpcommAlgoHostTwoShot:
      return c.host_chunk_vecs;
    case tpcommAlgoIsland:
      return c.island_chunk_vecs;
    case tpcommAlgoHostBulk:
      return stepBytes(c.knobs.bulk_step_bytes, c.bulk_step_bytes) / kVecBytes;
    default:
      return 0;
  }
}
bool hostSentinelCall(const Comm& c, int algo, size_t bytes) {
  return algo == tpcommAlgoHostOneShot && c.knobs.host_sentinel &&
         bytes <= c.host_sentinel_step_bytes;
}
GridPlan gridOf(const Comm& c, int algo, size_t bytes) {
  const size_t step = algo != tpcommAlgoHostOneShot      ? chunkOf(c, algo) * kVecBytes
                      : hostSentinelCall(c, algo, bytes) ? c.host_sentinel_step_bytes
                                                         : c.host_step_bytes;
  return planGrid(algo, bytes, step, c.world, c.knobs);
}

const char* setName(int algo, bool sentinel) {
  switch (algo) {
    case tpcommAlgoOneShot:
      return "oneshot";
    case tpcommAlgoTwoShot:
      return "twoshot";
    case tpcommAlgoHostOneShot:
      return sentinel ? "host_sentinel" : "host_oneshot";
    case tpcommAlgoHostTwoShot:
      return "host_twoshot";
    case tpcommAlgoIsland:
      return "island";
    case tpcommAlgoHostBulk:
      return "host_bulk";
  }
  return "-";
}

void row(const Comm& c, size_t bytes, bool aligned, tpcommDataType_t dt) {
  PolicyInput in;
  in.world = c.world;
  in.bytes = bytes;
  in.fabric = c.fabric;
  in.two_islands = c.two_islands;
  in.nccl_available = c.nccl;
  in.host_transport = c.host_transport;
  in.forced_algo = c.forced;
  in.strict = c.strict;
  in.tuned = c.tuned;
  const Decision d = choose(in);
  printf("%zu %d %d %d %d %d %016llx", bytes, aligned, static_cast<int>(dt),
         static_cast<int>(d.error), d.algo, d.fallback,
         static_cast<unsigned long long>(fnv(d.reason)));
  if (d.error != tpcommSuccess || !isKernelAlgo(d.algo)) {
    printf(" -\n");
    return;
  }
  const GridPlan g = gridOf(c, d.algo, bytes);
  LaunchArgs a{d.algo,
               g.blocks,
               g.threads,
               g.push_batch,
               g.push_eighths,
               c.knobs.pdl,
               nullptr,
               nullptr,
               bytes / dtypeSize(dt),
               dt,
               chunkOf(c, d.algo),
               c.knobs.lean};
  a.host_sentinel = hostSentinelCall(c, d.algo, bytes);
  // launch.cu: which kernel, with which DeviceComm call fields.
  const OneShotCall geo = oneShotGeometry(c.dev, a);
  const bool sentinel_set = d.algo == tpcommAlgoOneShot || a.host_sentinel;
  const bool lean = a.lean && sentinel_set && oneShotLeanFits(c.dev, a, aligned);
  const bool launch_error = a.host_sentinel && geo.nsteps != 1;
  printf(" %s %d %d %d %d %d %zu %zu %zu %zu %d %d\n", setName(d.algo, a.host_sentinel), lean,
         g.blocks, g.threads, g.push_batch, g.push_eighths, a.chunk_vecs, geo.region, geo.nsteps,
         geo.per, a.pdl, launch_error);
}

}  // namespace

int main() {
  struct Geo {
    size_t slot, host_slot;
  };
  const Geo geos[] = {{16 * MiB, 4 * MiB}, {1 * MiB, 256 * KiB}};
  const SizeTable tuned = {{4 * KiB, tpcommAlgoOneShot},
                           {1 * MiB, tpcommAlgoTwoShot},
                           {8 * MiB, tpcommAlgoHostBulk},
                           {SIZE_MAX, tpcommAlgoNccl}};
  const std::vector<size_t> sizes = {2,         6,
                                     16,        1000,
                                     4 * KiB,   4 * KiB + 2,
                                     64 * KiB,  64 * KiB + 16,
                                     256 * KiB, 256 * KiB + 16,
                                     512 * KiB, 512 * KiB + 16,
                                     1 * MiB,   1 * MiB + 16,
                                     2 * MiB,   4 * MiB + 6,
                                     16 * MiB,  64 * MiB};
  const std::vector<size_t> wide_sizes = {16,          4 * KiB + 2,    64 * KiB + 16, 256 * KiB,
                                          512 * KiB,   512 * KiB + 16, 1 * MiB,       1 * MiB + 16,
                                          4 * MiB + 6, 64 * MiB};
  const std::vector<std::string> knob_sets = {
      "-",
      "lean=0",
      "host_sentinel=0",
      "oneshot_step_bytes=0",
      "push_batch=4,push_eighths=3",
      "block_bytes=8192,host_block_bytes=4096,bulk_block_bytes=65536,bulk_step_bytes=262144,"
      "max_threads=256"};
  struct Fab {
    const char* name;
    Fabric f;
    bool islands;
  };
  const Fab fabs[] = {{"nvlink", Fabric::kNvlink, false},
                      {"pcie", Fabric::kPcie, false},
                      {"pcie", Fabric::kPcie, true},
                      {"host", Fabric::kHost, false}};
  printf(
      "# plan golden v1: generated by tests/cpu/golden/gen_plan_golden.cc from commit 9c896c8\n");
  printf("# @ world fabric two_islands nccl forced strict tuned geo knobs\n");
  printf(
      "# bytes aligned dtype error algo fallback fnv64(reason) kernel_set lean blocks threads "
      "push_batch push_eighths chunk_vecs region nsteps per pdl launch_error\n");
  for (int world : {2, 3, 4, 5, 6, 8})
    for (const Fab& fab : fabs)
      for (int nccl : {0, 1})
        for (int forced : {-1, 1, 2, 3, 4, 5, 6, 7, 99})
          for (int strict : {0, 1})
            for (int tuned_idx : {0, 1})
              for (int geo_idx : {0, 1})
                for (size_t ki = 0; ki < knob_sets.size(); ++ki) {
                  // The full knob/geometry grid only where it can matter: auto and forced kernels,
                  // NCCL present, not strict, no tuning table; otherwise the defaults.
                  const bool base = ki == 0 && geo_idx == 0;
                  if (geo_idx == 1 && ki != 0) continue;
                  const bool wide =
                      nccl == 1 && strict == 0 && tuned_idx == 0 && forced != 3 && forced != 99;
                  if (!base && !wide) continue;
                  if (tuned_idx == 1 && forced != -1) continue;
                  if (strict == 1 && forced != -1) continue;
                  if (!base && (world == 3 || world == 5)) continue;
                  Comm c{};
                  c.world = world;
                  c.fabric = fab.f;
                  c.two_islands = fab.islands;
                  c.nccl = nccl;
                  c.forced = forced;
                  c.strict = strict;
                  c.tuned = tuned_idx ? &tuned : nullptr;
                  c.host_transport = fab.f == Fabric::kHost || isHostAlgo(forced);
                  applyKnobs(knob_sets[ki], &c.knobs);
                  c.knobs.pdl = true;  // settings.pdl on an sm_90 device
                  DeviceComm& d = c.dev;
                  d.world = world;
                  d.slot_bytes = geos[geo_idx].slot;
                  if (c.host_transport) {
                    d.host_slot_bytes = geos[geo_idx].host_slot;
                    d.out_slot_bytes = bulkSlotBytes(geos[geo_idx].host_slot);
                    d.hs_slot_bytes = kHostSentinelSlotBytes;
                    c.host_step_bytes = hostOneShotStepBytes(d);
                    c.host_sentinel_step_bytes = hostSentinelStepBytes(d);
                    c.host_chunk_vecs = hostTwoShotChunkVecs(d);
                    c.bulk_step_bytes = hostBulkStepBytes(d);
                  }
                  c.oneshot_step_bytes = oneShotStepBytes(d);
                  c.chunk_vecs = twoShotChunkVecs(d);
                  c.island_chunk_vecs = islandChunkVecs(d);
                  printf("@ %d %s %d %d %d %d %d %d %s\n", world, fab.name, fab.islands, nccl,
                         forced, strict, tuned_idx, geo_idx, knob_sets[ki].c_str());
                  for (size_t bytes : base&& forced == -1 ? sizes : wide_sizes)
                    for (bool aligned : {true, false})
                      for (tpcommDataType_t dt : {tpcommBfloat16, tpcommFloat32}) {
                        // Alignment and datatype only change the kernel (lean or not) and
                        // the element count: varied with the defaults only.
                        const bool varied = base && forced == -1;
                        if ((!aligned || dt == tpcommFloat32) && !varied) continue;
                        if (dt == tpcommFloat32 && bytes % 4 != 0) continue;
                        row(c, bytes, aligned, dt);
                      }
                }
  return 0;
}
