// The planner decides every call exactly as the call path did before it existed: the same
// algorithm, reason, kernel, grid, step and one-shot geometry. tests/cpu/data/plan_golden.txt was
// written once from the pre-planner code (9c896c8: allreduce.cc's step and grid helpers,
// launch.cu's kernel choice) by tests/cpu/golden/gen_plan_golden.cc, which builds against that
// code only and stays in git history (commit 51fed77; its header says how to run it), over
// worlds 2-8, every fabric, NCCL present or not, every forced algorithm, strict mode, a tuning
// table, two slot geometries, six knob sets, 18 sizes, both alignments and two datatypes. The
// decisions changed on purpose since (new host tables, reason wording) are named in the file's
// header, each with the rows it moved.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "kernels/layout/device_comm.h"
#include "kernels/runtime/algo_launch.h"
#include "plan/planner.h"

namespace tpcomm {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

uint64_t fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The generator's names for the kernel a call ran: the kernel-set getter and its lean entries.
std::string kernelOf(tpcommVariant_t v) {
  switch (v) {
    case tpcommVariantP2pOneShotLean:
      return "oneshot 1";
    case tpcommVariantP2pOneShot:
      return "oneshot 0";
    case tpcommVariantP2pTwoShot:
      return "twoshot 0";
    case tpcommVariantIsland:
      return "island 0";
    case tpcommVariantHostOneShotSentinelLean:
      return "host_sentinel 1";
    case tpcommVariantHostOneShotSentinel:
      return "host_sentinel 0";
    case tpcommVariantHostOneShotLL:
      return "host_oneshot 0";
    case tpcommVariantHostTwoShotLL:
      return "host_twoshot 0";
    case tpcommVariantHostBulk:
      return "host_bulk 0";
    default:
      return "-";
  }
}

// A group header: "@ world fabric two_islands nccl forced strict tuned geo knobs".
bool factsOfHeader(const std::string& line, CommFacts* f, std::string* why) {
  static const SizeTable tuned = {{4 * KiB, tpcommAlgoOneShot},
                                  {1 * MiB, tpcommAlgoTwoShot},
                                  {8 * MiB, tpcommAlgoHostBulk},
                                  {SIZE_MAX, tpcommAlgoNccl}};
  std::istringstream in(line.substr(1));
  std::string fabric, knobs;
  int islands = 0, nccl = 0, strict = 0, tuned_idx = 0, geo = 0;
  *f = CommFacts{};
  in >> f->world >> fabric >> islands >> nccl >> f->forced_algo >> strict >> tuned_idx >> geo >>
      knobs;
  if (!in) {
    *why = "bad header: " + line;
    return false;
  }
  f->fabric = fabric == "nvlink" ? Fabric::kNvlink
              : fabric == "pcie" ? Fabric::kPcie
                                 : Fabric::kHost;
  f->two_islands = islands == 1;
  f->nccl_available = nccl == 1;
  f->strict = strict == 1;
  f->tuned = tuned_idx ? &tuned : nullptr;
  f->host_transport = f->fabric == Fabric::kHost || isHostAlgo(f->forced_algo);
  if (knobs != "-") {
    *why = parseLaunchKnobs(knobs, &f->knobs);
    if (!why->empty()) return false;
  }
  f->knobs.pdl = true;  // an sm_90 device with TPCOMM_PDL=1
  // The host two-shot had LL entries only (its pulled form, host_twoshot_pull, came later: the
  // knob keeps LL at every size; test_host_pull_plan.cc tests the form).
  f->knobs.host_ll_bytes = INT_MAX;
  // The slot layouts of the default 16 MiB slots and of 1 MiB ones (comm/lifecycle/config.cc gives
  // the host inboxes a quarter), as init sets them up.
  DeviceComm d{};
  d.world = f->world;
  d.slot_bytes = geo == 0 ? 16 * MiB : 1 * MiB;
  if (f->host_transport) {
    d.host_slot_bytes = d.slot_bytes / 4;
    d.out_slot_bytes = bulkSlotBytes(d.host_slot_bytes);
    d.hs_slot_bytes = kHostSentinelSlotBytes;
  }
  f->slots = slotCapacity(d);
  return true;
}

// What the planner says for one row's call, in the row's format.
std::string planRow(const CommFacts& f, size_t bytes, bool aligned, int dtype) {
  const CallPlan p = planCall(f, Call{bytes, aligned});
  const Decision& d = p.decision;
  char buf[320];
  snprintf(buf, sizeof(buf), "%zu %d %d %d %d %d %016llx", bytes, aligned ? 1 : 0, dtype,
           static_cast<int>(d.error), d.algo, d.fallback ? 1 : 0,
           static_cast<unsigned long long>(fnv(d.reason)));
  std::string out = buf;
  if (!isKernelVariant(p.variant)) return out + " -";
  snprintf(buf, sizeof(buf), " %s %d %d %d %d %zu %zu %zu %zu %d 0", kernelOf(p.variant).c_str(),
           p.grid.blocks, p.grid.threads, p.grid.push_batch, p.grid.push_eighths, p.chunk_vecs,
           p.geometry.region, p.geometry.nsteps, p.geometry.per, p.pdl ? 1 : 0);
  return out + buf;
}

// TPCOMM_PLAN_GOLDEN_REWRITE=FILE writes the table back to FILE with every row as planned now:
// for a deliberate change of the decisions (a policy table), whose own tests say what changed;
// `diff` against the file shows every row it moved, and the file's header names the change.
TEST(PlanGolden, EveryCallIsPlannedAsBeforeThePlanner) {
  std::ifstream file(std::string(TPCOMM_TEST_DATA_DIR) + "/plan_golden.txt");
  ASSERT_TRUE(file) << "missing tests/cpu/data/plan_golden.txt";
  const char* rewrite_path = std::getenv("TPCOMM_PLAN_GOLDEN_REWRITE");
  std::ofstream rewrite;
  if (rewrite_path) rewrite.open(rewrite_path);
  std::string line, header, why;
  CommFacts f;
  int rows = 0, wrong = 0;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#' || line[0] == '@') rewrite << line << "\n";
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '@') {
      header = line;
      ASSERT_TRUE(factsOfHeader(line, &f, &why)) << why;
      continue;
    }
    size_t bytes = 0;
    int aligned = 0, dtype = 0;
    ASSERT_EQ(sscanf(line.c_str(), "%zu %d %d", &bytes, &aligned, &dtype), 3) << line;
    const std::string got = planRow(f, bytes, aligned == 1, dtype);
    rewrite << got << "\n";
    ++rows;
    if (got != line && ++wrong <= 10)
      ADD_FAILURE() << header << "\n  want " << line << "\n  got  " << got;
  }
  EXPECT_EQ(wrong, 0) << "of " << rows << " calls";
  EXPECT_GT(rows, 20000);
}

}  // namespace
}  // namespace tpcomm
