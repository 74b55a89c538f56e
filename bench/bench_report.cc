#include "bench/bench_report.h"

#include <cstdio>
#include <map>

#include "support/host_data.h"

namespace tpcomm::bench {
namespace {

std::string human(size_t b) {
  char buf[32];
  if (b >= (1u << 20))
    snprintf(buf, sizeof(buf), "%zuM", b >> 20);
  else if (b >= 1024)
    snprintf(buf, sizeof(buf), "%zuK", b >> 10);
  else
    snprintf(buf, sizeof(buf), "%zu", b);
  return buf;
}

const Result* find(const std::vector<Result>& rs, const std::string& mode, const std::string& be,
                   size_t bytes) {
  for (const Result& r : rs)
    if (r.mode == mode && r.backend == be && r.bytes == bytes) return &r;
  return nullptr;
}

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) o += c;
  }
  return o;
}

}  // namespace

void printTable(const Args& a, int ranks, const std::string& mode, const std::vector<Result>& rs,
                const std::vector<std::string>& backends) {
  std::vector<size_t> sizes;
  for (const Result& r : rs)
    if (r.mode == mode && (sizes.empty() || sizes.back() != r.bytes)) {
      bool seen = false;
      for (size_t s : sizes) seen |= s == r.bytes;
      if (!seen) sizes.push_back(r.bytes);
    }
  // nccl-tests' bus bandwidth: all-reduce moves 2(n-1)/n of its bytes per rank, the halves (n-1)/n.
  const bool ar = a.collective == "allreduce";
  const double busf = ranks > 1 ? (ar ? 2.0 : 1.0) * (ranks - 1) / ranks : 1.0;
  printf(
      "\n# tpcomm-bench: %d ranks, %s, %s mode, out of place%s%s; time = median us per call over "
      "%d reps of %d calls (spread = (max-min)/median); busbw GB/s = bytes/time * %s(n-1)/n\n",
      ranks, test::dtypeName(a.dtype), mode.c_str(), ar ? "" : ", ", ar ? "" : a.collective.c_str(),
      a.reps, a.iters, ar ? "2" : "");
  printf("%10s %11s %8s", "size(B)", "count", "type");
  for (const std::string& b : backends)
    printf(" | %12s %6s %6s", (b + " us").c_str(), "spread", "busbw");
  const bool has_nccl = [&] {
    for (const auto& b : backends)
      if (b == "nccl") return true;
    return false;
  }();
  if (has_nccl) printf(" | %9s", "auto/nccl");
  printf(" | auto ran\n");
  for (size_t bytes : sizes) {
    printf("%10zu %11zu %8s", bytes, bytes / test::elemSize(a.dtype), test::dtypeName(a.dtype));
    for (const std::string& b : backends) {
      const Result* r = find(rs, mode, b, bytes);
      if (!r || !r->ok) {
        printf(" | %12s %6s %6s", "n/a", "", "");
        continue;
      }
      const double spread = r->median_us > 0 ? (r->max_us - r->min_us) / r->median_us : 0;
      printf(" | %12.2f %5.0f%% %6.1f%s", r->median_us, spread * 100,
             bytes / (r->median_us * 1e3) * busf, r->wrong > 0 ? "!" : "");
    }
    if (has_nccl) {
      const Result* au = find(rs, mode, "auto", bytes);
      const Result* nc = find(rs, mode, "nccl", bytes);
      if (au && nc && au->ok && nc->ok)
        printf(" | %8.2fx", au->median_us / nc->median_us);
      else
        printf(" | %9s", "n/a");
    }
    const Result* au = find(rs, mode, "auto", bytes);
    printf(" | %s\n", au ? au->algo.c_str() : "");
  }
  long wrong = 0;
  for (const Result& r : rs) wrong += r.mode == mode && r.wrong > 0 ? r.wrong : 0;
  printf("# %s: %ld wrong elements in total (checked against the fp64 reference)%s\n", mode.c_str(),
         wrong, wrong ? "  <-- FAILED" : "");
  (void)human;
}

bool writeJson(const std::string& path, const Args& a, int ranks, const std::string& machine,
               const std::vector<Result>& rs) {
  FILE* f = fopen(path.c_str(), "w");
  if (!f) return false;
  fprintf(f, "{\n  \"tool\": \"tpcomm-bench\",\n  \"ranks\": %d,\n  \"dtype\": \"%s\",\n", ranks,
          test::dtypeName(a.dtype));
  fprintf(f, "  \"collective\": \"%s\",\n", a.collective.c_str());
  fprintf(f, "  \"machine\": \"%s\",\n  \"iters\": %d,\n  \"reps\": %d,\n  \"results\": [\n",
          esc(machine).c_str(), a.iters, a.reps);
  for (size_t i = 0; i < rs.size(); ++i) {
    const Result& r = rs[i];
    fprintf(f,
            "    {\"backend\": \"%s\", \"mode\": \"%s\", \"bytes\": %zu, \"count\": %zu, "
            "\"ok\": %s, \"median_us\": %.4f, \"min_us\": %.4f, \"max_us\": %.4f, "
            "\"algo\": \"%s\", \"wrong\": %ld, \"note\": \"%s\"}%s\n",
            r.backend.c_str(), r.mode.c_str(), r.bytes, r.count, r.ok ? "true" : "false",
            r.median_us, r.min_us, r.max_us, esc(r.algo).c_str(), r.wrong, esc(r.note).c_str(),
            i + 1 < rs.size() ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  fclose(f);
  return true;
}

}  // namespace tpcomm::bench
