#include "tools/tune/tune_fused.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

#include "bench/timing.h"
#include "tests/support/host_data.h"
#include "tools/tune/tune_measure.h"

namespace tpcomm::cli {
namespace {

// One form of the fused call: communicators whose knobs steer the planner to it.
struct Form {
  const char* label;
  const char* knobs;
  std::vector<tpcommComm_t> comms;
  bool dead = false;  // skipped or broken: not tried again
};

// Each rank's buffers besides timing::Rank's send (the input) and recv (the norm output).
struct Bufs {
  void* res_in = nullptr;
  void* res_out = nullptr;
  void* gamma = nullptr;
};

struct Run {
  const FusedMeasureConfig& cfg;
  std::vector<timing::Rank> ranks;
  std::vector<Bufs> bufs;
  size_t es = 0;
};

std::string upload(void* dst, const std::vector<uint8_t>& src) {
  return timing::cudaWhy(cudaMemcpy(dst, src.data(), src.size(), cudaMemcpyHostToDevice),
                         "cudaMemcpy (fused inputs)");
}

// The inputs, residuals and gamma: fixed, so that every form's output can be compared.
std::string setup(Run* run) {
  const FusedMeasureConfig& cfg = run->cfg;
  run->es = test::elemSize(cfg.dtype);
  const size_t count = cfg.rows.back() * cfg.hidden, bytes = count * run->es;
  std::string err = timing::setupRanks(cfg.devlist, bytes, &run->ranks);
  run->bufs.assign(cfg.devlist.size(), Bufs());
  const std::vector<uint8_t> gamma = test::makeInput(cfg.dtype, cfg.hidden, 99, 0);
  for (size_t r = 0; r < run->ranks.size() && err.empty(); ++r) {
    Bufs& b = run->bufs[r];
    cudaSetDevice(run->ranks[r].dev);
    err = timing::cudaWhy(cudaMalloc(&b.res_in, bytes), "cudaMalloc (residual)");
    if (err.empty()) err = timing::cudaWhy(cudaMalloc(&b.res_out, bytes), "cudaMalloc (residual)");
    if (err.empty())
      err = timing::cudaWhy(cudaMalloc(&b.gamma, gamma.size()), "cudaMalloc (gamma)");
    if (err.empty())
      err =
          upload(run->ranks[r].send, test::makeInput(cfg.dtype, count, 4321, static_cast<int>(r)));
    // Every rank's residual is the same (tpcomm.h: residualIn is the same on every rank).
    if (err.empty()) err = upload(b.res_in, test::makeInput(cfg.dtype, count, 777, 0));
    if (err.empty()) err = upload(b.gamma, gamma);
  }
  return err;
}

void freeRun(Run* run) {
  for (size_t r = 0; r < run->bufs.size() && r < run->ranks.size(); ++r) {
    cudaSetDevice(run->ranks[r].dev);
    cudaFree(run->bufs[r].res_in);
    cudaFree(run->bufs[r].res_out);
    cudaFree(run->bufs[r].gamma);
  }
  timing::freeRanks(&run->ranks);
}

std::string create(Form* f, const std::vector<int>& devlist) {
  tpcommConfig_t cfg = TPCOMM_CONFIG_INITIALIZER;
  cfg.launchKnobs = f->knobs;
  cfg.ncclMode = tpcommNcclOff;  // the fused call never needs the fallback
  return createComms(devlist, cfg, &f->comms);
}

std::string enqueue(Run& run, const Form& f, size_t rows) {
  std::string err;
  const tpcommRmsNormParams_t params = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  tpcommGroupStart();
  for (size_t r = 0; r < run.ranks.size() && err.empty(); ++r) {
    const Bufs& b = run.bufs[r];
    if (tpcommAllReduceAddRmsNorm(run.ranks[r].send, b.res_in, b.res_out, run.ranks[r].recv,
                                  b.gamma, rows, run.cfg.hidden, run.cfg.dtype, &params, f.comms[r],
                                  run.ranks[r].stream) != tpcommSuccess)
      err = tpcommGetLastError();
  }
  tpcommGroupEnd();
  return err;
}

// What the planner runs for this form at this row count (tpcommCommExplainAddRmsNorm).
std::string variantOf(const Form& f, const FusedMeasureConfig& cfg, size_t rows) {
  tpcommCallInfo_t info{};
  if (tpcommCommExplainAddRmsNorm(f.comms[0], rows, cfg.hidden, cfg.dtype, nullptr, &info) !=
      tpcommSuccess)
    return "";
  const char* n = tpcommVariantName(info.variant);
  return n ? n : "";
}

// Every rank's residual_out and norm, concatenated.
std::string outputs(Run& run, size_t rows, std::vector<uint8_t>* all) {
  const size_t bytes = rows * run.cfg.hidden * run.es;
  all->assign(2 * bytes * run.ranks.size(), 0);
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    cudaSetDevice(run.ranks[r].dev);
    uint8_t* at = all->data() + 2 * bytes * r;
    std::string e = timing::cudaWhy(
        cudaMemcpy(at, run.bufs[r].res_out, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (check)");
    if (e.empty())
      e = timing::cudaWhy(cudaMemcpy(at + bytes, run.ranks[r].recv, bytes, cudaMemcpyDeviceToHost),
                          "cudaMemcpy (check)");
    if (!e.empty()) return e;
  }
  return "";
}

// Whether every rank's outputs equal rank 0's.
bool ranksAgree(const std::vector<uint8_t>& all, size_t ranks) {
  const size_t per = all.size() / ranks;
  for (size_t r = 1; r < ranks; ++r)
    if (memcmp(all.data(), all.data() + r * per, per) != 0) return false;
  return true;
}

std::string clear(Run& run, size_t rows) {
  const size_t bytes = rows * run.cfg.hidden * run.es;
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    cudaSetDevice(run.ranks[r].dev);
    // All ones: NaN in every datatype, so an output never written cannot pass the check.
    std::string e = timing::cudaWhy(cudaMemset(run.bufs[r].res_out, 0xFF, bytes), "cudaMemset");
    if (e.empty()) e = timing::cudaWhy(cudaMemset(run.ranks[r].recv, 0xFF, bytes), "cudaMemset");
    if (!e.empty()) return e;
  }
  return "";
}

// Times one form at one row count and checks its bits against `want` (the pair's; empty: this is
// the pair, whose outputs become `want`). Returns the time (< 0: not used) or sets *fatal.
double measureForm(Run& run, Form& f, size_t rows, std::vector<uint8_t>* want,
                   FusedMeasureResult* out, std::string* fatal) {
  const std::string at = std::string(f.label) + " at " + std::to_string(rows) + " rows: ";
  *fatal = clear(run, rows);
  if (!fatal->empty()) return -1;
  const timing::Timing t = timing::timeInGraph(
      run.ranks, [&] { return enqueue(run, f, rows); }, run.cfg.warmup, run.cfg.iters,
      run.cfg.reps);
  if (t.cuda_failed) {
    *fatal = at + t.error;
    return -1;
  }
  const std::string async = asyncError(f.comms);
  if (!async.empty()) {
    out->failures.push_back(at + async + " (not tried again)");
    f.dead = true;
    return -1;
  }
  if (!t.ok) {
    out->failures.push_back(at + t.error);
    return -1;
  }
  if (run.cfg.check) {
    std::vector<uint8_t> got;
    *fatal = outputs(run, rows, &got);
    if (!fatal->empty()) return -1;
    const bool agree = ranksAgree(got, run.ranks.size());
    const bool same = want->empty() || got == *want;
    if (!agree || !same) {
      ++out->wrong;
      out->failures.push_back(
          at + (agree ? "bits differ from the unfused pair's" : "the ranks' bits differ") +
          " (not used; please report this)");
      return -1;
    }
    if (want->empty()) want->swap(got);
  }
  return t.median_us;
}

}  // namespace

std::string measureFused(const FusedMeasureConfig& cfg, FusedMeasureResult* out) {
  if (cfg.rows.empty() || cfg.devlist.size() < 2) return "nothing to measure";
  Run run{cfg, {}, {}, 0};
  std::string err = setup(&run);
  // The pair first: its bits are what the fused forms must give.
  Form forms[] = {{"unfused", "variant=add_rmsnorm", {}},
                  {"one-shot", "fused_twoshot_rows=0", {}},
                  {"two-shot", "fused_twoshot_rows=1", {}}};
  for (Form& f : forms)
    if (err.empty()) err = create(&f, cfg.devlist);
  const size_t total = cfg.rows.size() * 3;
  size_t step = 0;
  for (size_t rows : cfg.rows) {
    if (!err.empty()) break;
    FusedPoint p;
    p.rows = rows;
    std::vector<uint8_t> want;
    double* times[] = {&p.pair_us, &p.oneshot_us, &p.twoshot_us};
    std::string* names[] = {&p.pair_variant, &p.oneshot_variant, &p.twoshot_variant};
    for (int i = 0; i < 3 && err.empty(); ++i) {
      ++step;
      Form& f = forms[i];
      if (f.dead || (i > 0 && cfg.check && want.empty())) continue;
      *names[i] = variantOf(f, cfg, rows);
      *times[i] = measureForm(run, f, rows, &want, out, &err);
      fprintf(stderr, "[%3zu/%3zu] %5zu rows  %-9s %10.2f us  %s\n", step, total, rows, f.label,
              *times[i], names[i]->c_str());
    }
    // Beyond one step of the one-shot its communicators run the call unfused: not a one-shot. Where
    // the two-shot does not serve the fabric (host memory, the island schedule), both run the
    // same kernel: nothing to choose.
    if (p.oneshot_variant == p.pair_variant) p.oneshot_us = -1;
    if (p.twoshot_variant == p.oneshot_variant || p.twoshot_variant == p.pair_variant)
      p.twoshot_us = -1;
    out->points.push_back(p);
  }
  for (Form& f : forms)
    for (tpcommComm_t c : f.comms) tpcommCommDestroy(c);
  freeRun(&run);
  return err;
}

}  // namespace tpcomm::cli
