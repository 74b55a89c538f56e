#include "bench/fused_args.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "bench/whole_number.h"

namespace tpcomm::bench {
namespace {

void usage(FILE* f) {
  fprintf(f,
          "usage: tpcomm-bench-fused [options]\n"
          "  --ranks N          ranks, 1..8 (default 2; more ranks than GPUs share them)\n"
          "  --hidden H         elements per row, bf16 (default 7168)\n"
          "  --tokens 1,2,...   rows per call, each timed (default 1,2,4,...,256; run in\n"
          "                     ascending order)\n"
          "  --fp8              the norm's output quantised to FP8 e4m3\n"
          "  --iters 50         calls per captured graph\n"
          "  --reps 20          graph replays (the median is reported)\n"
          "  --json FILE        write the rows as JSON too\n");
}

// "1,16,128": whole numbers in [1, kFusedMaxTokens], no empty item; sorted, duplicates dropped.
bool parseTokens(const std::string& s, std::vector<size_t>* out) {
  std::vector<size_t> t;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma - start);
    unsigned long long v = 0;
    if (!parseWhole(item.c_str(), 1, kFusedMaxTokens, &v)) return false;
    t.push_back(static_cast<size_t>(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  *out = t;
  return true;
}

const char* const kValued[] = {"--ranks", "--hidden", "--tokens", "--iters", "--reps", "--json"};

// One option that takes a value (kValued), with its value; false if the value is bad.
bool takeValue(const std::string& k, const char* v, FusedArgs* a) {
  unsigned long long n = 0;
  if (k == "--tokens") return parseTokens(v, &a->tokens);
  if (k == "--json") {
    a->json = v;
    return !a->json.empty();
  }
  const unsigned long long hi = k == "--ranks" ? 8 : k == "--hidden" ? kFusedMaxHidden : 1000000;
  if (!parseWhole(v, 1, hi, &n)) return false;
  if (k == "--ranks") a->ranks = static_cast<int>(n);
  if (k == "--hidden") a->hidden = static_cast<size_t>(n);
  if (k == "--iters") a->iters = static_cast<int>(n);
  if (k == "--reps") a->reps = static_cast<int>(n);
  return true;
}

}  // namespace

bool parseFusedArgs(int argc, char** argv, FusedArgs* a, int* exit_code) {
  *exit_code = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      usage(stdout);
      return false;
    }
    if (k == "--fp8") {
      a->fp8 = true;
      continue;
    }
    const bool valued = std::find(std::begin(kValued), std::end(kValued), k) != std::end(kValued);
    const char* v = valued && i + 1 < argc ? argv[++i] : nullptr;
    if (v && takeValue(k, v, a)) continue;
    if (!valued)
      fprintf(stderr, "tpcomm-bench-fused: unknown option %s\n", k.c_str());
    else if (!v)
      fprintf(stderr, "tpcomm-bench-fused: %s needs a value\n", k.c_str());
    else
      fprintf(stderr, "tpcomm-bench-fused: bad value for %s: '%s'\n", k.c_str(), v);
    usage(stderr);
    *exit_code = 2;
    return false;
  }
  return true;
}

}  // namespace tpcomm::bench
