// tpcomm-bench-fused: the fused all-reduce + add + RMSNorm (tpcommAllReduceAddRmsNorm) next to
// the plain all-reduce of the same bytes and the unfused pair (tpcomm's all-reduce, then the
// add+RMSNorm kernel on its own), in CUDA graphs, same process, same streams, same run; bf16 rows
// of --hidden elements for each token count. The fused call runs twice: as the planner picks it
// (a thread-block cluster per row by default where every GPU is sm_90+ and the rows' clusters fit)
// and with a block per row (communicators made with the knob fused_cluster=0, column
// `block/row`), so one run shows both kernels. The pair's
// epilogue kernel takes a block per row, as the library's unfused path does by default. Ranks may
// share a GPU (--ranks above the GPU count): that measures protocol and launch overhead, not a
// link, and the output says so.
//   tpcomm-bench-fused [--ranks N] [--hidden H] [--tokens 1,2,4,...] [--fp8] [--json FILE]
//   (fused_args.h; --help lists every option)
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/fused_args.h"
#include "bench/fused_report.h"
#include "bench/timing.h"
#include "kernels/add_rmsnorm.h"
#include "plan/fused_plan.h"
#include "support/host_data.h"
#include "tpcomm/tpcomm.h"

namespace {

using tpcomm::timing::Rank;

struct Bufs {
  void *res = nullptr, *res_out = nullptr, *norm = nullptr, *gamma = nullptr, *scale = nullptr;
};

using Opts = tpcomm::bench::FusedArgs;

// Everything one run shares: the ranks' streams and send/recv buffers, their communicators and
// the add+RMSNorm buffers.
struct Run {
  const Opts& o;
  std::vector<int> devlist;
  std::vector<Rank> ranks;
  std::vector<tpcommComm_t> comms;
  std::vector<tpcommComm_t> block_comms;  // the same ranks with fused_cluster=0
  std::vector<Bufs> b;
};

// The residual starts as the input; gamma and the FP8 scale are fixed. Empty: success.
std::string setupBufs(Run* run, size_t max_bytes) {
  const Opts& o = run->o;
  run->b.resize(o.ranks);
  for (int r = 0; r < o.ranks; ++r) {
    Bufs& b = run->b[r];
    cudaSetDevice(run->devlist[r]);
    const std::vector<uint8_t> x = tpcomm::test::makeInput(tpcommBfloat16, max_bytes / 2, 1, r);
    const std::vector<uint8_t> g = tpcomm::test::makeInput(tpcommBfloat16, o.hidden, 2, 0);
    const float scale = 0.05f;
    if (cudaMalloc(&b.res, max_bytes) || cudaMalloc(&b.res_out, max_bytes) ||
        cudaMalloc(&b.norm, max_bytes) || cudaMalloc(&b.gamma, o.hidden * 2) ||
        cudaMalloc(&b.scale, 4) ||
        cudaMemcpy(run->ranks[r].send, x.data(), max_bytes, cudaMemcpyHostToDevice) ||
        cudaMemcpy(b.res, x.data(), max_bytes, cudaMemcpyHostToDevice) ||
        cudaMemcpy(b.gamma, g.data(), o.hidden * 2, cudaMemcpyHostToDevice) ||
        cudaMemcpy(b.scale, &scale, 4, cudaMemcpyHostToDevice))
      return "cuda allocation or copy failed";
  }
  return "";
}

// The plain all-reduce of t rows, into the norm buffers.
std::string enqueueAllReduce(Run& run, size_t t) {
  const size_t count = t * run.o.hidden;
  tpcommGroupStart();
  for (int r = 0; r < run.o.ranks; ++r)
    if (tpcommAllReduce(run.ranks[r].send, run.b[r].norm, count, tpcommBfloat16, tpcommSum,
                        run.comms[r], run.ranks[r].stream) != tpcommSuccess)
      return tpcommGroupEnd(), std::string(tpcommGetLastError());
  tpcommGroupEnd();
  return "";
}

// The unfused pair: the all-reduce, then the add+RMSNorm kernel on its own.
std::string enqueuePair(Run& run, size_t t) {
  const std::string e = enqueueAllReduce(run, t);
  if (!e.empty()) return e;
  const Opts& o = run.o;
  for (int r = 0; r < o.ranks; ++r) {
    const Bufs& b = run.b[r];
    tpcomm::AddRmsNormArgs a{};
    a.ar = b.norm;
    a.residual_in = b.res;
    a.residual_out = b.res_out;
    a.norm_out = o.fp8 ? run.ranks[r].recv : b.norm;  // in place over the sums, as fused
    a.gamma = b.gamma;
    a.quant_scale = o.fp8 ? static_cast<const float*>(b.scale) : nullptr;
    a.rows = t;
    a.hidden = o.hidden;
    a.dtype = tpcommBfloat16;
    a.eps = 1e-6f;
    // A block per row, as the library's unfused path runs it.
    const tpcomm::AddRmsNormLaunch g{tpcomm::epilogueVariant(o.fp8),
                                     tpcomm::addRmsNormGrid(t, o.hidden, 2, /*max_blocks=*/0)};
    cudaSetDevice(run.devlist[r]);
    if (tpcomm::launchAddRmsNorm(a, g, run.ranks[r].stream) != tpcommSuccess)
      return tpcommGetLastError();
  }
  return "";
}

// The fused all-reduce + add + RMSNorm on `comms` (run.comms or run.block_comms).
std::string enqueueFused(Run& run, const std::vector<tpcommComm_t>& comms, size_t t,
                         tpcommRmsNormParams_t* prm) {
  const Opts& o = run.o;
  tpcommGroupStart();
  for (int r = 0; r < o.ranks; ++r) {
    const Bufs& b = run.b[r];
    prm->quantScale = o.fp8 ? static_cast<const float*>(b.scale) : nullptr;
    if (tpcommAllReduceAddRmsNorm(
            run.ranks[r].send, b.res, b.res_out, o.fp8 ? run.ranks[r].recv : b.norm, b.gamma, t,
            o.hidden, tpcommBfloat16, prm, comms[r], run.ranks[r].stream) != tpcommSuccess)
      return tpcommGroupEnd(), std::string(tpcommGetLastError());
  }
  tpcommGroupEnd();
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  int parse_rc = 0;
  if (!tpcomm::bench::parseFusedArgs(argc, argv, &o, &parse_rc)) return parse_rc;
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
    fprintf(stderr, "tpcomm-bench-fused: no CUDA device visible\n");
    return 1;
  }
  Run run{o, {}, {}, {}, {}, {}};
  for (int r = 0; r < o.ranks; ++r) run.devlist.push_back(r % ngpu);
  const bool shared = o.ranks > ngpu;
  const size_t max_bytes = o.tokens.back() * o.hidden * 2;
  std::string err = tpcomm::timing::setupRanks(run.devlist, max_bytes, &run.ranks);
  run.comms.resize(o.ranks);
  run.block_comms.resize(o.ranks);
  tpcommConfig_t cfg = TPCOMM_CONFIG_INITIALIZER;
  if (err.empty() &&
      tpcommCommInitAll(run.comms.data(), o.ranks, run.devlist.data(), &cfg) != tpcommSuccess)
    err = tpcommGetLastError();
  tpcommConfig_t block_cfg = TPCOMM_CONFIG_INITIALIZER;
  block_cfg.launchKnobs = "fused_cluster=0";  // on top of TPCOMM_KNOBS
  if (err.empty() && tpcommCommInitAll(run.block_comms.data(), o.ranks, run.devlist.data(),
                                       &block_cfg) != tpcommSuccess)
    err = tpcommGetLastError();
  if (err.empty()) err = setupBufs(&run, max_bytes);
  if (!err.empty()) {
    fprintf(stderr, "tpcomm-bench-fused: %s\n", err.c_str());
    return 1;
  }
  printf(
      "# tpcomm-bench-fused: %d ranks on %d GPU(s)%s, bf16, hidden %zu%s, CUDA graphs (%d calls "
      "per graph, median of %d), us per call\n",
      o.ranks, ngpu, shared ? " (ranks SHARE a GPU: protocol and launch cost, not a link)" : "",
      o.hidden, o.fp8 ? ", FP8 output" : "", o.iters, o.reps);
  printf("%8s %10s %10s %10s %10s %10s %10s %7s  %s\n", "tokens", "allreduce", "ar+norm", "fused",
         "fused-ar", "fused/pair", "block/row", "blocks", "variant (as planned)");
  FILE* js = o.json.empty() ? nullptr : fopen(o.json.c_str(), "w");
  if (js)
    fprintf(js, "{\"ranks\": %d, \"gpus\": %d, \"hidden\": %zu, \"fp8\": %s, \"rows\": [\n",
            o.ranks, ngpu, o.hidden, o.fp8 ? "true" : "false");
  int rc = 0;
  for (size_t ti = 0; ti < o.tokens.size(); ++ti) {
    const size_t t = o.tokens[ti];
    tpcommRmsNormParams_t prm = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
    const tpcomm::timing::EnqueueAll fns[4] = {
        [&] { return enqueueAllReduce(run, t); }, [&] { return enqueuePair(run, t); },
        [&] { return enqueueFused(run, run.comms, t, &prm); },
        [&] { return enqueueFused(run, run.block_comms, t, &prm); }};
    tpcomm::bench::FusedRow row{t};
    tpcommCallInfo_t info{};  // the fused call's, as planned (k = 2)
    for (int k = 0; k < 4; ++k) {
      const tpcomm::timing::Timing tm =
          tpcomm::timing::timeInGraph(run.ranks, fns[k], 3, o.iters, o.reps);
      if (!tm.ok) {
        fprintf(stderr, "tpcomm-bench-fused: tokens %zu: %s\n", t, tm.error.c_str());
        rc = 1;
      }
      row.us[k] = tm.median_us;
      row.ok[k] = tm.ok;
      // Only when it ran: a refused call leaves the last call of run.comms another column's.
      if (k == 2 && tm.ok) tpcommCommGetLastCall(run.comms[0], &info);
    }
    row.variant = row.ok[2] ? tpcommVariantName(info.variant) : nullptr;
    row.blocks = row.ok[2] ? info.blocks : 0;
    fputs(tpcomm::bench::fusedRowText(row).c_str(), stdout);
    if (js)
      fprintf(js, "  %s%s\n", tpcomm::bench::fusedRowJson(row).c_str(),
              ti + 1 == o.tokens.size() ? "" : ",");
    if (ti == 0 && row.ok[2]) printf("# %s\n", info.reason);
  }
  if (js) fprintf(js, "]}\n"), fclose(js);
  for (tpcommComm_t c : run.comms) tpcommCommDestroy(c);
  for (tpcommComm_t c : run.block_comms) tpcommCommDestroy(c);
  tpcomm::timing::freeRanks(&run.ranks);
  return rc;
}
