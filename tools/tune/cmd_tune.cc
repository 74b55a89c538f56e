// `tpcomm tune`: measure the candidates on this machine (tune_measure.cc), pick per size and merge
// into rules (tune_rules.h), measure the fused call's forms (tune_fused.cc) and the quantized
// wire's codecs (tune_wire.cc), check the rules are never slower than NCCL, and write the tuning
// table for this topology (plan/tuning_table.h). Exit status: 0 table written (or --dry-run done),
// 1 measured but something went wrong (wrong results, the NCCL check, the file), 2 cannot run
// (no GPU, fewer than 2 GPUs, usage).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "comm/lifecycle/probe_view.h"
#include "common/env.h"
#include "common/error.h"
#include "kernels/runtime/fabric_probe_run.h"
#include "tools/commands.h"
#include "tools/doctor/doctor_facts.h"
#include "tools/doctor/doctor_preview.h"
#include "tools/doctor/doctor_table.h"
#include "tools/tune/tune_fused.h"
#include "tools/tune/tune_measure.h"
#include "tools/tune/tune_report.h"
#include "tools/tune/tune_rules.h"
#include "tools/tune/tune_wire.h"
#include "topo/classify.h"
#include "topo/discover.h"
#include "topo/p2p_cache.h"
#include "topo/probe/fabric_probe_cache.h"

namespace tpcomm::cli {
namespace {

constexpr int kExitOk = 0, kExitFailed = 1, kExitCannotRun = 2;

struct TuneArgs {
  std::string out;
  int world = 0;  // 0: every visible GPU (at most 8)
  bool quick = false;
  bool dry_run = false;
  bool check = true;
  tpcommDataType_t dtype = tpcommBfloat16;
  const char* dtype_name = "bf16";
  int iters = 0, reps = 0;  // 0: by --quick
  double tie = 0.02;
  double tolerance = 0.05;
  bool wire = true;      // measure the quantized wire's codecs too
  bool fused = true;     // measure the fused call's forms too
  size_t hidden = 7168;  // their row width (elements)
  bool share_gpu = false;
};

void usage(FILE* out) {
  fprintf(out,
          "usage: tpcomm tune [--out FILE] [--world N] [--quick] [--dtype bf16|fp16|fp32]\n"
          "                   [--dry-run] [--iters N] [--reps N] [--tie F] [--tolerance F]\n"
          "                   [--no-check] [--no-wire] [--hidden H] [--no-fused]\n"
          "                   [--share-gpu]\n"
          "\n"
          "Measures tpcomm's algorithms (each forced) and NCCL on this machine, one rank per GPU\n"
          "in this process, in CUDA-graph mode, for 1 KiB .. 64 MiB (x2 steps; --quick: x4 and\n"
          "fewer repetitions), picks the fastest per size, merges sizes into rules and writes\n"
          "the tuning table for this machine's topology. Other world sizes already in the file\n"
          "are kept. A rule slower than NCCL by more than the tolerance is never written.\n"
          "Then the fused all-reduce + add + RMSNorm (rows of --hidden elements, 1 .. 1024 rows):\n"
          "its one-shot, its two-shot and the unfused pair, each checked against the pair's\n"
          "bits; the row count from which the two-shot wins goes into the table\n"
          "(fused_twoshot_rows), and the one below which the unfused pair wins\n"
          "(fused_unfused_below).\n"
          "Then the quantized wire (wire=int8|int4|fp8|fp8_e5m2, from 1 MiB) in the form it takes\n"
          "on this fabric, each result checked against the codec's error bound: the size from\n"
          "which each codec beats the best full-precision candidate goes into the table\n"
          "(wire_from); an opted-in all-reduce below it keeps full precision.\n"
          "\n"
          "  --out FILE       write here (default: TPCOMM_TUNING_FILE, else the user's cache\n"
          "                   folder: tuning-<topology key>.json)\n"
          "  --world N        ranks on GPUs 0..N-1 (default: every visible GPU, at most 8)\n"
          "  --quick          x4 size steps, 20 calls a graph, 5 replays (default x2, 50, 9)\n"
          "  --dtype T        bf16 (default), fp16 or fp32; the table is by bytes, any dtype\n"
          "  --dry-run        measure and print, write nothing\n"
          "  --iters N        calls captured per graph;  --reps N  graph replays (median kept)\n"
          "  --tie F          times within F of the fastest count as equal (default 0.02)\n"
          "  --tolerance F    never slower than NCCL x (1 + F) (default 0.05)\n"
          "  --no-check       do not check results against the host reference\n"
          "  --no-wire        do not measure the quantized wire (the table keeps no wire_from)\n"
          "  --hidden H       the fused call's row width in elements (default 7168)\n"
          "  --no-fused       do not measure the fused call (the table keeps no crossover)\n"
          "  --share-gpu      every rank on GPU 0, for testing tune itself: the numbers are\n"
          "                   not this machine's links, so nothing is written (--dry-run)\n"
          "\n"
          "Exit status: 0 table written, 1 measured but not written or wrong results seen, 2\n"
          "cannot run here (no GPU, fewer than 2 GPUs, bad option). See docs/TUNING.md.\n");
}

bool parseDtype(const std::string& s, TuneArgs* a) {
  if (s == "bf16" || s == "bfloat16")
    a->dtype = tpcommBfloat16, a->dtype_name = "bf16";
  else if (s == "fp16" || s == "float16" || s == "half")
    a->dtype = tpcommFloat16, a->dtype_name = "fp16";
  else if (s == "fp32" || s == "float32" || s == "float")
    a->dtype = tpcommFloat32, a->dtype_name = "fp32";
  else
    return false;
  return true;
}

bool parseNumber(const std::string& s, double lo, double hi, double* out) {
  char* end = nullptr;
  const double v = strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !(v >= lo && v <= hi)) return false;
  *out = v;
  return true;
}

// Parses argv; false with *code set on --help or an error.
bool parseArgs(int argc, char** argv, TuneArgs* a, int* code) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    const std::string value = has_value ? argv[i + 1] : "";
    double num = 0;
    bool ok = true;
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      *code = kExitOk;
      return false;
    } else if (arg == "--quick") {
      a->quick = true;
    } else if (arg == "--dry-run") {
      a->dry_run = true;
    } else if (arg == "--no-check") {
      a->check = false;
    } else if (arg == "--no-wire") {
      a->wire = false;
    } else if (arg == "--no-fused") {
      a->fused = false;
    } else if (arg == "--share-gpu") {
      a->share_gpu = a->dry_run = true;
    } else if (arg == "--hidden" && has_value) {
      ok = parseNumber(argv[++i], 1, 65536, &num) && num == static_cast<int>(num);
      a->hidden = static_cast<size_t>(num);
    } else if (arg == "--out" && has_value) {
      a->out = argv[++i];
    } else if (arg == "--dtype" && has_value) {
      ok = parseDtype(argv[++i], a);
    } else if (arg == "--world" && has_value) {
      ok = parseNumber(argv[++i], 2, 8, &num) && num == static_cast<int>(num);
      a->world = static_cast<int>(num);
    } else if (arg == "--iters" && has_value) {
      ok = parseNumber(argv[++i], 1, 10000, &num) && num == static_cast<int>(num);
      a->iters = static_cast<int>(num);
    } else if (arg == "--reps" && has_value) {
      ok = parseNumber(argv[++i], 1, 1000, &num) && num == static_cast<int>(num);
      a->reps = static_cast<int>(num);
    } else if (arg == "--tie" && has_value) {
      ok = parseNumber(argv[++i], 0, 0.2, &a->tie);
    } else if (arg == "--tolerance" && has_value) {
      ok = parseNumber(argv[++i], 0, 1, &a->tolerance);
    } else {
      fprintf(stderr, "tpcomm tune: unknown option or missing value: '%s'\n\n", arg.c_str());
      usage(stderr);
      *code = kExitCannotRun;
      return false;
    }
    if (!ok) {
      fprintf(stderr, "tpcomm tune: bad value '%s' for %s (see tpcomm tune --help)\n",
              value.c_str(), arg.c_str());
      *code = kExitCannotRun;
      return false;
    }
  }
  if (a->tie > a->tolerance) a->tie = a->tolerance;  // a tie must never break the NCCL rule
  return true;
}

std::string gpuRange(const std::vector<int>& devlist) {
  std::string s;
  for (int d : devlist) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

// Finds the GPUs and the world to measure; false (after saying why) when tune cannot run here.
bool pickWorld(const TuneArgs& a, topo::Topology* topo, int* world) {
  if (topo::discover(topo) != tpcommSuccess) {
    fprintf(stderr,
            "tpcomm tune: no GPU visible (%s): there is nothing to measure. Run it on the machine "
            "the table is for; `tpcomm doctor` says what this machine has.\n",
            plainError(lastError()).c_str());
    return false;
  }
  const int max_world = topo->size() < kMaxRanks ? topo->size() : kMaxRanks;
  if (a.share_gpu) {  // every rank on GPU 0
    *world = a.world ? a.world : 2;
    return true;
  }
  if (max_world < 2) {
    fprintf(stderr, "tpcomm tune: %d GPU visible: an all-reduce needs at least 2 GPUs\n",
            topo->size());
    return false;
  }
  *world = a.world ? a.world : max_world;
  if (*world > topo->size()) {
    fprintf(stderr, "tpcomm tune: --world %d needs %d GPUs, %d visible\n", *world, *world,
            topo->size());
    return false;
  }
  return true;
}

// The fabric probe's verdict for these GPUs (cached, else measured): the built-in tables this
// table replaces follow it, so the user sees which kind of box the numbers come from.
void printProbe(const topo::Topology& topo, const std::vector<int>& devlist) {
  topo::FabricProbe probe;
  std::string why;
  const bool p2p = topo::fabricFor(topo, devlist) != Fabric::kHost;
  topo::FabricProbeOptions o;
  o.prober = topo::runFabricProbe;
  if (topo::obtainFabricProbe(topo, p2p ? devlist : std::vector<int>{devlist[0]}, o, &probe,
                              &why) == topo::ProbeSource::kNone) {
    fprintf(stderr, "tpcomm tune: no fabric probe (%s)\n", why.c_str());
    return;
  }
  const topo::FabricFinding f = topo::judgeFabric(probe, p2p);
  fprintf(stderr, "tpcomm tune: fabric probe: %s: %s\n             %s\n",
          fabricVerdictName(f.verdict), f.what.c_str(), f.action.c_str());
}

MeasureConfig measureConfig(const TuneArgs& a, int world) {
  MeasureConfig cfg;
  for (int g = 0; g < world; ++g) cfg.devlist.push_back(a.share_gpu ? 0 : g);
  cfg.dtype = a.dtype;
  cfg.sizes = sweepSizes(1024, size_t{64} << 20, a.quick ? 4 : 2);
  cfg.iters = a.iters ? a.iters : a.quick ? 20 : 50;
  cfg.reps = a.reps ? a.reps : a.quick ? 5 : 9;
  cfg.check = a.check;
  return cfg;
}

void printMeasured(const TuneArgs& a, int world, Fabric fabric, const MeasureResult& m,
                   const std::vector<SizePick>& picks, const SizeTable& rules) {
  printf("Measured: world %d, %s, CUDA graphs, us per call (* fastest)\n%s", world, a.dtype_name,
         measuredText(m.samples, world, fabric, m.candidates, picks).c_str());
  for (int c : m.candidates)
    if (!eligibleOn(fabric, c))
      printf("  (info) %s: measured, but auto on fabric %s never picks it\n", tpcommAlgoName(c),
             fabricName(fabric));
  for (const std::string& s : m.skipped) printf("  not measured: %s\n", s.c_str());
  for (const std::string& f : m.failures) printf("  failed: %s\n", f.c_str());
  printf("\nRules for world %d (fabric %s):\n%s", world, fabricName(fabric),
         rulesText(rules).c_str());
}

std::string usText(double us) {
  char buf[32];
  if (us < 0)
    snprintf(buf, sizeof(buf), "%10s", "-");
  else
    snprintf(buf, sizeof(buf), "%10.2f", us);
  return buf;
}

void printFused(const TuneArgs& a, int world, const FusedMeasureResult& m, size_t rows,
                size_t unfused_below) {
  printf("\nThe fused call: world %d, rows of %zu %s, CUDA graphs, us per call%s\n", world,
         a.hidden, a.dtype_name, a.share_gpu ? " (ranks sharing one GPU)" : "");
  printf("%7s %10s %10s %10s  %s\n", "rows", "one-shot", "two-shot", "unfused", "variants");
  for (const FusedPoint& p : m.points)
    printf("%7zu %s %s %s  %s / %s / %s\n", p.rows, usText(p.oneshot_us).c_str(),
           usText(p.twoshot_us).c_str(), usText(p.pair_us).c_str(),
           p.oneshot_variant.empty() ? "-" : p.oneshot_variant.c_str(),
           p.twoshot_variant.empty() ? "-" : p.twoshot_variant.c_str(),
           p.pair_variant.empty() ? "-" : p.pair_variant.c_str());
  for (const std::string& f : m.failures) printf("  failed: %s\n", f.c_str());
  if (rows == 0)
    printf(
        "fused_twoshot_rows: not measured here (no row count ran both forms): the planner "
        "keeps its default\n");
  else if (rows == SIZE_MAX)
    printf(
        "fused_twoshot_rows: inf (the one-shot held at every row count; the two-shot only "
        "beyond one step of it)\n");
  else
    printf(
        "fused_twoshot_rows: %zu (the two-shot from %zu rows within one step of the "
        "one-shot)\n",
        rows, rows);
  if (unfused_below == SIZE_MAX)
    printf(
        "fused_unfused_below: inf (the unfused pair measured faster at the largest row count: "
        "fused calls run unfused)\n");
  else if (unfused_below > 0)
    printf("fused_unfused_below: %zu (the unfused pair measured faster below %zu rows)\n",
           unfused_below, unfused_below);
  else
    printf(
        "fused_unfused_below: none (the fused call no slower than the pair at every row "
        "count measured)\n");
}

// The quantized wire's table: a row per size, the best full-precision candidate and each codec's
// time ('*' on the fastest), then each codec's wire_from.
void printWire(const TuneArgs& a, int world, int form, const std::vector<size_t>& sizes,
               const WireMeasureResult& w, const std::vector<TuningSample>& eligible,
               const size_t* wire_from) {
  printf(
      "\nThe quantized wire: world %d, %s, its %s form (wire=<codec>, forced), CUDA graphs, us "
      "per call (* fastest)%s\n",
      world, a.dtype_name, tpcommAlgoName(form), a.share_gpu ? " (ranks sharing one GPU)" : "");
  std::vector<std::string> header = {"bytes", "full precision", "us"};
  for (const WireRun& r : w.runs) header.push_back(std::string(wireCodecName(r.codec)) + " us");
  TextTable t(header);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const FullPrecision full = bestFullPrecision(eligible, world, sizes[i]);
    double fastest = full.algo >= 0 ? full.us : -1;
    for (const WireRun& r : w.runs)
      if (r.us[i] >= 0 && (fastest < 0 || r.us[i] < fastest)) fastest = r.us[i];
    const auto cell = [fastest](double us) {
      if (us < 0) return std::string("-");
      char buf[32];
      snprintf(buf, sizeof(buf), "%.2f%s", us, us == fastest ? "*" : "");
      return std::string(buf);
    };
    std::vector<std::string> row = {
        formatBytes(sizes[i]), full.algo >= 0 ? tpcommAlgoName(full.algo) : "-", cell(full.us)};
    for (const WireRun& r : w.runs) row.push_back(cell(r.us[i]));
    t.add(row);
  }
  printf("%s", t.render().c_str());
  for (const std::string& s : w.skipped) printf("  not measured: %s\n", s.c_str());
  for (const std::string& f : w.failures) printf("  failed: %s\n", f.c_str());
  for (const WireRun& r : w.runs) {
    const size_t from = wire_from[r.codec];
    const char* codec = wireCodecName(r.codec);
    if (from == 0)
      printf("wire_from %-9s not measured (an opted-in all-reduce takes it from wire_min_bytes)\n",
             codec);
    else if (from == SIZE_MAX)
      printf(
          "wire_from %-9s inf (full precision measured faster at the largest size: an "
          "opted-in all-reduce keeps it)\n",
          codec);
    else
      printf("wire_from %-9s %zu (faster from %s on: an opted-in all-reduce takes it from there)\n",
             codec, from, formatBytes(from).c_str());
  }
}

// Measures each codec of the quantized wire in the form it takes on this fabric and picks its
// crossover (tune_wire_pick.h) into the world's entry; false when the measuring could not run.
bool tuneWire(const TuneArgs& a, const MeasureConfig& cfg, Fabric fabric, FabricVerdict verdict,
              const MeasureResult& m, WorldTable* entry, json::Value* record, long* wrong) {
  if (!a.wire) return true;
  const int world = static_cast<int>(cfg.devlist.size());
  std::string why;
  WireMeasureConfig wc;
  wc.form = wireForm(fabric, verdict, a.share_gpu, &why);
  for (size_t b : cfg.sizes)
    if (b >= (size_t{1} << 20)) wc.sizes.push_back(b);
  if (wc.form != tpcommAlgoAuto && wc.sizes.empty()) why = "no size of the sweep is 1 MiB or more";
  if (!why.empty()) {
    printf("\nThe quantized wire: not measured: %s\n", why.c_str());
    return true;
  }
  wc.devlist = cfg.devlist;
  wc.dtype = a.dtype;
  wc.iters = cfg.iters;
  wc.reps = cfg.reps;
  wc.check = a.check;
  fprintf(stderr, "tpcomm tune: the quantized wire: its %s form on fabric %s, %s .. %s\n",
          tpcommAlgoName(wc.form), fabricName(fabric), formatBytes(wc.sizes.front()).c_str(),
          formatBytes(wc.sizes.back()).c_str());
  WireMeasureResult w;
  const std::string fatal = measureWire(wc, &w);
  if (!fatal.empty()) {
    fprintf(stderr, "tpcomm tune: measuring the quantized wire failed: %s\n", fatal.c_str());
    return false;
  }
  const std::vector<TuningSample> eligible = eligibleSamples(m.samples, fabric);
  for (const WireRun& r : w.runs)
    entry->wire_from[r.codec] = wireFrom(wirePoints(wc.sizes, r.us, eligible, world), a.tie);
  printWire(a, world, wc.form, wc.sizes, w, eligible, entry->wire_from);
  *record = wireMeasuredJson(wc.form, wc.sizes, w.runs, eligible, world, entry->wire_from);
  *wrong += w.wrong;
  return true;
}

// Measures the fused call's forms and picks the crossovers (tune_fused_pick.h) into the world's
// entry; false when the measuring could not run.
bool tuneFused(const TuneArgs& a, const MeasureConfig& cfg, WorldTable* entry, json::Value* record,
               long* wrong) {
  if (!a.fused) return true;
  FusedMeasureConfig fc;
  fc.devlist = cfg.devlist;
  fc.dtype = a.dtype;
  fc.hidden = a.hidden;
  fc.rows = sweepSizes(1, 1024, a.quick ? 4 : 2);
  fc.iters = cfg.iters;
  fc.reps = cfg.reps;
  fc.check = a.check;
  fprintf(stderr, "tpcomm tune: the fused call: rows of %zu x %s, %zu .. %zu rows\n", a.hidden,
          a.dtype_name, fc.rows.front(), fc.rows.back());
  FusedMeasureResult m;
  const std::string fatal = measureFused(fc, &m);
  if (!fatal.empty()) {
    fprintf(stderr, "tpcomm tune: measuring the fused call failed: %s\n", fatal.c_str());
    return false;
  }
  const size_t rows = fusedTwoShotRows(m.points, a.tie);
  const size_t unfused_below = fusedUnfusedBelow(m.points, rows, a.tie);
  printFused(a, static_cast<int>(cfg.devlist.size()), m, rows, unfused_below);
  bool any = false;
  for (const FusedPoint& p : m.points) any = any || p.pair_us >= 0;
  if (!any) {
    fprintf(stderr,
            "tpcomm tune: the fused call could not be measured at any row count (see "
            "the failures above)\n");
    return false;
  }
  entry->fused_twoshot_rows = rows;
  entry->fused_unfused_below = unfused_below;
  *record = fusedMeasuredJson(m.points, a.hidden, rows, unfused_below);
  *wrong += m.wrong;
  return true;
}

// Checks the table and writes it to `path` (or says what --dry-run would write); false on error.
bool checkAndWrite(const TuneArgs& a, const std::string& path, const TuningTable& table,
                   const MeasureResult& m) {
  std::string why;
  bool nccl_measured = false;
  for (int c : m.candidates) nccl_measured = nccl_measured || c == tpcommAlgoNccl;
  if (!nccl_measured)
    fprintf(stderr,
            "tpcomm tune: warning: NCCL was not measured, so the table could not be "
            "checked against it\n");
  if (!validateTuningTable(table, &why) ||
      !tableNeverSlowerThanNccl(table, m.samples, a.tolerance, &why)) {
    fprintf(stderr, "tpcomm tune: table not written: %s\n", why.c_str());
    return false;
  }
  if (a.dry_run) {
    printf("\n--dry-run: nothing written (would write %s)\n", path.empty() ? "-" : path.c_str());
  } else if (saveTuningTable(path, table) != tpcommSuccess) {
    fprintf(stderr, "tpcomm tune: %s\n", lastError());
    return false;
  } else {
    printf("\nWrote %s (worlds:", path.c_str());
    for (const WorldTable& w : table.tables) printf(" %d", w.world);
    printf("); `tpcomm doctor` shows what the policy picks with it.\n");
  }
  return true;
}

}  // namespace

int cmdTune(int argc, char** argv) {
  TuneArgs a;
  int code = kExitOk;
  if (!parseArgs(argc, argv, &a, &code)) return code;
  topo::Topology topo;
  int world = 0;
  if (!pickWorld(a, &topo, &world)) return kExitCannotRun;
  const MeasureConfig cfg = measureConfig(a, world);

  // The fabric these ranks will run on, as the communicator sees it (P2P health from the cache).
  topo::checkP2pHealth(&topo, cfg.devlist);
  if (a.share_gpu)
    fprintf(stderr,
            "tpcomm tune: --share-gpu: every rank on GPU 0; the numbers measure protocol and "
            "launch overhead, not a link, and nothing is written\n");
  else
    printProbe(topo, cfg.devlist);
  PreviewOptions popts;
  popts.transport = env().transport;
  const PreviewWorld fabric = previewWorld(topo, cfg.devlist, popts);
  if (!fabric.error.empty()) {
    fprintf(stderr, "tpcomm tune: %s\n", fabric.error.c_str());
    return kExitCannotRun;
  }
  const std::string path = a.out.empty() ? defaultTuningPath(topo.key()) : a.out;
  if (path.empty() && !a.dry_run) {
    fprintf(stderr, "tpcomm tune: no cache folder (HOME unset): pass --out FILE\n");
    return kExitCannotRun;
  }
  fprintf(stderr,
          "tpcomm tune: world %d on GPUs %s (%s), fabric %s: %s\n"
          "             %s, %s .. %s in x%d steps, %d calls a graph, median of %d replays\n",
          world, gpuRange(cfg.devlist).c_str(), topo.gpus[0].name.c_str(),
          fabricName(fabric.fabric), fabric.fabric_reason.c_str(), a.dtype_name,
          formatBytes(cfg.sizes.front()).c_str(), formatBytes(cfg.sizes.back()).c_str(),
          a.quick ? 4 : 2, cfg.iters, cfg.reps);

  MeasureResult m;
  const std::string fatal = measureAll(cfg, &m);
  if (!fatal.empty()) {
    fprintf(stderr, "tpcomm tune: measuring failed: %s\n", fatal.c_str());
    return kExitFailed;
  }
  if (m.samples.empty()) {
    fprintf(stderr, "tpcomm tune: no candidate could be measured\n");
    return kExitFailed;
  }
  // Only what a communicator on this fabric can run goes into the table; the rest is shown.
  const std::vector<SizePick> picks =
      pickPerSize(eligibleSamples(m.samples, fabric.fabric), world, cfg.sizes, a.tie);
  const SizeTable rules = mergeRules(picks);
  if (rules.empty()) {
    fprintf(stderr, "tpcomm tune: nothing a communicator on fabric %s can run was measured\n",
            fabricName(fabric.fabric));
    return kExitFailed;
  }
  printMeasured(a, world, fabric.fabric, m, picks, rules);

  TuningTable previous;
  std::string why;
  const bool have_previous =
      !path.empty() && loadTuningTable(path, topo.key(), &previous, &why) == TuningLoad::kLoaded;
  json::Value measured =
      measuredWorldJson(m.samples, world, cfg.sizes, m.candidates, picks, a.dtype_name);
  WorldTable entry;
  entry.world = world;
  entry.rules = rules;
  json::Value wire, fused;
  long wrong = m.wrong;
  if (!tuneFused(a, cfg, &entry, &fused, &wrong)) return kExitFailed;
  if (!fused.isNull()) measured.set("fused", std::move(fused));
  // The communicators' verdict (decided once per process, at the first communicator's init).
  if (!tuneWire(a, cfg, fabric.fabric, machineFabricVerdict(topo), m, &entry, &wire, &wrong))
    return kExitFailed;
  if (!wire.isNull()) measured.set("wire", std::move(wire));
  const TuningTable table = mergeTable(have_previous ? &previous : nullptr, topo.key(),
                                       fabric.fabric, std::move(entry), std::move(measured));
  if (!checkAndWrite(a, path, table, m)) return kExitFailed;
  if (wrong > 0) {
    fprintf(stderr, "tpcomm tune: %ld wrong results were seen (listed above, not used)\n", wrong);
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace tpcomm::cli
