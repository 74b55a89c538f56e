#include "bench/bench_args.h"

#include "bench/whole_number.h"
#include "common/byte_size.h"
#include "common/env.h"
#include "kernels/runtime/algo_launch.h"  // kThreadsPerBlock
#include "plan/knobs.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tpcomm::bench {
namespace {

void usage(FILE* f) {
  fprintf(
      f,
      "usage: tpcomm-bench [options]\n"
      "  --ranks N            ranks (default: one per visible GPU; more ranks share GPUs)\n"
      "  --devices 0,1        GPUs to use, round robin over ranks\n"
      "  --min 1K --max 64M   size range in bytes (K/M/G suffixes, optionally B or iB)\n"
      "  --factor 4           size step factor\n"
      "  --dtype bf16         bf16 | fp16 | fp32\n"
      "  --mode both          eager | graph | both\n"
      "  --backends LIST      of auto,oneshot,twoshot,host_oneshot,host_twoshot,\n"
      "                       host_bulk,island,island_pull,oneshot_pull,twoshot_pull,nccl\n"
      "                       (default auto,oneshot,twoshot,nccl); NAME@KNOBS runs NAME with\n"
      "                       launch knobs (TPCOMM_KNOBS items joined by +), labelled so:\n"
      "                       oneshot_pull,oneshot_pull@pull_ll_bytes=0 times LL and flag pulls\n"
      "  --iters 50 --reps 9 --warmup 5\n"
      "  --max-blocks N       grid bound for tpcomm backends (0: policy)\n"
      "  --sweep-knobs        also time each kernel backend listed with several grid shapes\n"
      "                       (bytes per block 512..16K, push batch 1 and 4; host_bulk: 2K..16K\n"
      "                       per block, steps of a slot or 256K..32K, 2 or 4 of 8 warps\n"
      "                       pushing), host_oneshot with LL packets for every call (1K and 4K\n"
      "                       per block), oneshot with 1..5 of 8 warps pushing in\n"
      "                       multi-step calls and with 1..8 MiB steps (the grid's push\n"
      "                       batch, and 1 vector per thread), and auto without PDL and\n"
      "                       without the lean one-shot kernel\n"
      "  --collective allreduce  allreduce | reduce_scatter | all_gather (sizes: the whole\n"
      "                       message, world x the per-rank count)\n"
      "  --wire LIST          of [ALGO:]CODEC (CODEC: int8, int4, fp8, fp8_e5m2; ALGO: the\n"
      "                       two-shot whose form runs the codec: twoshot_pull, the default,\n"
      "                       twoshot (push) or host_twoshot (host memory)): also time each\n"
      "                       quantized wire (ALGO@wire=CODEC+wire_min_bytes=0), next to the\n"
      "                       backends listed (e.g. twoshot_pull,nccl); checked for the\n"
      "                       ranks' agreement only (the GPU tests check the values)\n"
      "  --no-check           skip the correctness check of every backend\n"
      "  --json FILE          write every measurement as JSON\n"
      "  --plot FILE.svg      draw us per call against size, a line per backend (NCCL too),\n"
      "                       a panel per mode; ranks sharing a GPU are labelled\n");
}

// The library's byte-size syntax (64K, 16MiB, ...), so the bench and TPCOMM_* sizes agree.
bool parseSize(const char* s, size_t* out) {
  size_t bytes = 0;
  std::string why;
  if (parseByteSize(s, &bytes, &why) && bytes == 0) why = "must be at least 1 byte";
  if (!why.empty()) {
    fprintf(stderr, "tpcomm-bench: size '%s': %s\n", s, why.c_str());
    return false;
  }
  *out = bytes;
  return true;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

bool parseBackend(const std::string& spec, BackendSpec* out, std::string* why) {
  *out = BackendSpec{};
  const size_t at = spec.find('@');
  const std::string name = spec.substr(0, at);
  out->algo = name == "nccl" ? static_cast<int>(tpcommAlgoNccl) : parseAlgoName(name);
  if (out->algo < 0) {
    *why = "unknown backend \"" + name + "\"";
    return false;
  }
  if (at == std::string::npos) return true;
  if (out->algo == tpcommAlgoNccl) {
    *why = "nccl takes no launch knobs";
    return false;
  }
  out->knobs = spec.substr(at + 1);
  for (char& ch : out->knobs)
    if (ch == '+') ch = ',';
  LaunchKnobs k;
  std::string bad = parseLaunchKnobs(out->knobs, &k);
  if (bad.empty()) bad = launchKnobsError(k, kThreadsPerBlock);
  if (out->knobs.empty()) bad = "no knobs after '@'";
  if (!bad.empty()) {
    *why = spec + ": " + bad;
    return false;
  }
  return true;
}

bool parseArgs(int argc, char** argv, Args* a, int* exit_code) {
  *exit_code = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto val = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    bool ok = true;
    if (k == "--help" || k == "-h") {
      usage(stdout);
      return false;
    } else if (k == "--no-check") {
      a->check = false;
    } else if (k == "--sweep-knobs") {
      a->sweep_knobs = true;
    } else if (!(v = val())) {
      ok = false;
    } else if (k == "--ranks") {
      ok = parseWholeInt(v, 1, 8, &a->ranks);
    } else if (k == "--devices") {
      for (const auto& d : split(v)) {
        int dev = 0;
        ok = ok && parseWholeInt(d.c_str(), 0, 1023, &dev);
        a->devices.push_back(dev);
      }
      ok = ok && !a->devices.empty();
    } else if (k == "--min") {
      ok = parseSize(v, &a->min_bytes);
    } else if (k == "--max") {
      ok = parseSize(v, &a->max_bytes);
    } else if (k == "--factor") {
      ok = parseWholeInt(v, 2, 1 << 20, &a->factor);
    } else if (k == "--dtype") {
      const std::string d = v;
      if (d == "bf16" || d == "bfloat16")
        a->dtype = tpcommBfloat16;
      else if (d == "fp16" || d == "float16")
        a->dtype = tpcommFloat16;
      else if (d == "fp32" || d == "float32")
        a->dtype = tpcommFloat32;
      else
        ok = false;
    } else if (k == "--mode") {
      const std::string m = v;
      a->eager = m == "eager" || m == "both";
      a->graph = m == "graph" || m == "both";
      ok = a->eager || a->graph;
    } else if (k == "--backends") {
      a->backends = split(v);
      for (const auto& b : a->backends) {
        BackendSpec spec;
        std::string why;
        if (ok && !parseBackend(b, &spec, &why)) {
          fprintf(stderr, "tpcomm-bench: --backends: %s\n", why.c_str());
          ok = false;
        }
      }
    } else if (k == "--iters") {
      ok = parseWholeInt(v, 1, 1000000, &a->iters);
    } else if (k == "--reps") {
      ok = parseWholeInt(v, 1, 1000000, &a->reps);
    } else if (k == "--warmup") {
      ok = parseWholeInt(v, 0, 1000000, &a->warmup);
    } else if (k == "--max-blocks") {
      ok = parseWholeInt(v, 0, 1024, &a->max_blocks);  // tpcommConfig_t::maxBlocks' range
    } else if (k == "--json") {
      a->json = v;
    } else if (k == "--plot") {
      a->plot = v;  // SVG only: refused here, before anything is measured
      ok = a->plot.size() > 4 && a->plot.compare(a->plot.size() - 4, 4, ".svg") == 0;
    } else if (k == "--wire") {
      a->wire = split(v);
      for (const auto& c : a->wire) {
        BackendSpec spec;
        std::string why;
        if (ok && !parseBackend(wireBackend(c), &spec, &why)) {
          fprintf(stderr, "tpcomm-bench: --wire: %s\n", why.c_str());
          ok = false;
        }
      }
    } else if (k == "--collective") {
      a->collective = v;
      ok = a->collective == "allreduce" || a->collective == "reduce_scatter" ||
           a->collective == "all_gather";
    } else {
      ok = false;
    }
    if (!ok) {
      fprintf(stderr, "tpcomm-bench: bad option %s %s\n", k.c_str(), v ? v : "(missing value)");
      usage(stderr);
      *exit_code = 2;
      return false;
    }
  }
  for (const auto& c : a->wire) a->backends.push_back(wireBackend(c));
  return true;
}

std::string wireBackend(const std::string& entry) {
  const size_t colon = entry.find(':');
  const std::string algo = colon == std::string::npos ? "twoshot_pull" : entry.substr(0, colon);
  const std::string codec = colon == std::string::npos ? entry : entry.substr(colon + 1);
  return algo + "@wire=" + codec + "+wire_min_bytes=0";
}

bool isWireBackend(const std::string& label) {
  return label.find("wire=") != std::string::npos;
}

}  // namespace tpcomm::bench
