#include "tools/tune/tune_wire.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

#include "bench/timing.h"
#include "kernels/runtime/variant_table.h"
#include "plan/knobs.h"
#include "tests/support/host_data.h"
#include "tools/tune/tune_measure.h"
#include "tools/tune/tune_wire_check.h"

namespace tpcomm::cli {
namespace {

// One codec's communicators: forced to the form, opted in from every size.
struct Codec {
  int codec = 0;
  std::string knobs;
  std::vector<tpcommComm_t> comms;
  tpcommResult_t last = tpcommSuccess;  // result of the last failed call
  bool measured = false;                // at least one size succeeded
  bool dead = false;                    // skipped or broken: not tried again
};

const char* name(const Codec& c) {
  return wireCodecName(c.codec);
}

std::string create(Codec* c, const WireMeasureConfig& cfg) {
  c->knobs = std::string("wire=") + name(*c) + ",wire_min_bytes=0";
  tpcommConfig_t config = TPCOMM_CONFIG_INITIALIZER;
  config.algo = cfg.form;
  config.ncclMode = tpcommNcclOff;  // the form is forced: never the fallback
  config.launchKnobs = c->knobs.c_str();
  return createComms(cfg.devlist, config, &c->comms);
}

std::string enqueue(Codec& c, std::vector<timing::Rank>& ranks, size_t count, tpcommDataType_t dt) {
  std::string err;
  tpcommGroupStart();
  for (size_t r = 0; r < ranks.size() && err.empty(); ++r) {
    const tpcommResult_t res = tpcommAllReduce(ranks[r].send, ranks[r].recv, count, dt, tpcommSum,
                                               c.comms[r], ranks[r].stream);
    if (res != tpcommSuccess) {
      c.last = res;
      err = tpcommGetLastError();
    }
  }
  tpcommGroupEnd();
  return err;
}

// "" where the call ran (or would run) a variant of the codec; else what ran instead and why.
std::string otherVariant(const tpcommCallInfo_t& info, const Codec& c) {
  const VariantRow* row = variantRow(info.variant);
  if (row && row->wire == c.codec) return "";
  const char* variant = tpcommVariantName(info.variant);
  return std::string(variant ? variant : "no variant") + " ran, not the " + name(c) +
         " wire: " + std::string(info.reason, strnlen(info.reason, sizeof(info.reason)));
}

// "" where every rank's output has rank 0's bits and those are within the codec's bound; else
// what is wrong. *cuda_error: a copy failed.
std::string checkOutputs(std::vector<timing::Rank>& ranks, const Codec& c,
                         const WireMeasureConfig& cfg,
                         const std::vector<std::vector<uint8_t>>& inputs, size_t count,
                         std::string* cuda_error) {
  const size_t bytes = count * test::elemSize(cfg.dtype);
  std::vector<uint8_t> out0(bytes), out(bytes);
  for (size_t r = 0; r < ranks.size(); ++r) {
    cudaSetDevice(ranks[r].dev);
    *cuda_error = timing::cudaWhy(
        cudaMemcpy((r == 0 ? out0 : out).data(), ranks[r].recv, bytes, cudaMemcpyDeviceToHost),
        "cudaMemcpy (result check)");
    if (!cuda_error->empty()) return "";
    if (r > 0 && memcmp(out.data(), out0.data(), bytes) != 0)
      return "rank " + std::to_string(r) + "'s bits differ from rank 0's";
  }
  size_t first = 0;
  const size_t bad = wireWrongElements(static_cast<WireCodec>(c.codec), cfg.dtype, count,
                                       out0.data(), inputs, &first);
  if (bad == 0) return "";
  return std::to_string(bad) + " elements outside the codec's error bound (the first at " +
         std::to_string(first) + ")";
}

struct Progress {
  size_t step, total;
};

// Times one codec at one size into run (us, variant); "" or a CUDA error that ends the whole run.
std::string measureOne(const WireMeasureConfig& cfg, std::vector<timing::Rank>& ranks,
                       const std::vector<std::vector<uint8_t>>& inputs, size_t index, Progress p,
                       Codec& c, WireRun* run, WireMeasureResult* out) {
  const size_t bytes = cfg.sizes[index], count = bytes / test::elemSize(cfg.dtype);
  const std::string at = std::string(name(c)) + " at " + std::to_string(bytes) + " bytes: ";
  const auto report = [&](const char* what, double us, const std::string& variant) {
    char time[32] = "         -";
    if (us >= 0) snprintf(time, sizeof(time), "%10.2f", us);
    fprintf(stderr, "[%3zu/%3zu] %9zu B  %-9s %s us  %s%s\n", p.step, p.total, bytes, name(c), time,
            variant.c_str(), what);
  };
  // What the planner gives this call: a size the codec does not take is not timed.
  tpcommCallInfo_t info{};
  std::string why = tpcommCommExplain(c.comms[0], count, cfg.dtype, &info) == tpcommSuccess
                        ? otherVariant(info, c)
                        : tpcommGetLastError();
  if (!why.empty()) {
    report("  n/a", -1, "");
    out->failures.push_back(at + why);
    return "";
  }
  std::string err = clearOutputs(ranks, bytes);
  if (!err.empty()) return err;
  timing::Timing t = timing::timeInGraph(
      ranks, [&] { return enqueue(c, ranks, count, cfg.dtype); }, cfg.warmup, cfg.iters, cfg.reps);
  if (t.cuda_failed) return at + t.error;
  const std::string async = asyncError(c.comms);
  if (!async.empty()) {
    t.ok = false;
    t.error = async + " (the communicator is broken; not tried again)";
    c.dead = true;
  }
  if (!t.ok && !c.measured && c.last == tpcommUnsupported) {
    out->skipped.push_back(std::string(name(c)) + ": " + t.error);
    fprintf(stderr, "tpcomm tune: skipping the %s wire: %s\n", name(c), t.error.c_str());
    c.dead = true;
    return "";
  }
  // Every rank ran the codec (the last call: the graphs' calls were captured from it).
  for (size_t r = 0; r < c.comms.size() && t.ok && why.empty(); ++r)
    if (tpcommCommGetLastCall(c.comms[r], &info) == tpcommSuccess) why = otherVariant(info, c);
  std::string wrong;
  if (t.ok && why.empty() && cfg.check) {
    wrong = checkOutputs(ranks, c, cfg, inputs, count, &err);
    if (!err.empty()) return err;
  }
  const char* name_of_variant = tpcommVariantName(info.variant);
  const std::string variant = name_of_variant ? name_of_variant : "";
  report(!t.ok            ? "  n/a"
         : !why.empty()   ? "  NOT THE CODEC"
         : !wrong.empty() ? "  WRONG RESULTS"
                          : "",
         t.ok ? t.median_us : -1, variant);
  if (!t.ok) {
    out->failures.push_back(at + t.error);
  } else if (!why.empty()) {
    out->failures.push_back(at + why);
  } else if (!wrong.empty()) {
    ++out->wrong;
    out->failures.push_back(at + wrong + " (not used; please report this)");
  } else {
    c.measured = true;
    run->us[index] = t.median_us;
    run->variants[index] = variant;
  }
  return "";
}

}  // namespace

std::string measureWire(const WireMeasureConfig& cfg, WireMeasureResult* out) {
  if (cfg.sizes.empty() || cfg.devlist.size() < 2) return "nothing to measure";
  std::vector<timing::Rank> ranks;
  std::vector<std::vector<uint8_t>> inputs;
  std::string err = setupInputs(cfg.devlist, cfg.dtype, cfg.sizes.back(), &ranks, &inputs);
  std::vector<Codec> codecs;
  for (WireCodec k : {WireCodec::kInt8, WireCodec::kInt4, WireCodec::kFp8E4M3, WireCodec::kFp8E5M2})
    if (err.empty()) {
      Codec c;
      c.codec = static_cast<int>(k);
      const std::string why = create(&c, cfg);
      if (!why.empty()) {
        out->skipped.push_back(std::string(name(c)) + ": " + why);
        fprintf(stderr, "tpcomm tune: skipping the %s wire: %s\n", name(c), why.c_str());
        c.dead = true;
      }
      codecs.push_back(std::move(c));
      out->runs.push_back({codecs.back().codec, std::vector<double>(cfg.sizes.size(), -1),
                           std::vector<std::string>(cfg.sizes.size())});
    }
  const size_t total = cfg.sizes.size() * codecs.size();
  size_t step = 0;
  for (size_t i = 0; i < cfg.sizes.size() && err.empty(); ++i)
    for (size_t k = 0; k < codecs.size() && err.empty(); ++k) {
      ++step;
      if (!codecs[k].dead)
        err =
            measureOne(cfg, ranks, inputs, i, Progress{step, total}, codecs[k], &out->runs[k], out);
    }
  for (Codec& c : codecs)
    for (tpcommComm_t comm : c.comms) tpcommCommDestroy(comm);
  timing::freeRanks(&ranks);
  return err;
}

}  // namespace tpcomm::cli
