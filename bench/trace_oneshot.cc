// trace-oneshot: where the time of a small one-shot call goes, from the kernel's own timeline
// stamps (build with -DTPCOMM_KERNEL_TRACE=ON; src/kernels/device/trace_device.cuh). One process
// drives `ranks` ranks (default: one per visible GPU; more than the GPUs share them round-robin,
// which measures protocol and launch cost, not a link), captures `calls` back-to-back calls of
// `bytes` per rank into a CUDA graph per rank, replays them, and prints per rank the median time
// between the stamps of a call and from one call's end to the next call's start. The one-shot
// kernel also runs host_oneshot and host_bulk (the same kernel over host memory); `fused` and
// `fused_block` trace tpcommAllReduceAddRmsNorm instead (bf16 rows of `hidden`, bytes / (2 hidden)
// of them: the cluster kernel as planned, or a block per row with the knob fused_cluster=0).
//   trace-oneshot [bytes=1024] [calls=1000] [oneshot|host_oneshot|host_bulk|fused|fused_block]
//                 [ranks] [hidden=7168]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/whole_number.h"
#include "kernels/runtime/trace.h"
#include "tpcomm/tpcomm.h"

namespace {

// CUDA and tpcomm both return 0 on success; a tpcomm failure also has a message.
#define CK(call)                                                                           \
  do {                                                                                     \
    const int rc_ = static_cast<int>(call);                                                \
    if (rc_ != 0) {                                                                        \
      fprintf(stderr, "trace-oneshot: %s failed with code %d (line %d)%s%s\n", #call, rc_, \
              __LINE__, strncmp(#call, "tpcomm", 6) == 0 ? ": " : "",                      \
              strncmp(#call, "tpcomm", 6) == 0 ? tpcommGetLastError() : "");               \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One rank's rows: the medians and means of the last `calls` calls' stamps (t: that rank's part
// of readKernelTrace's table).
void printRankRow(int r, const unsigned long long* t, int calls) {
  using namespace tpcomm;
  std::vector<const unsigned long long*> rows;
  for (int i = 0; i < kTraceCalls; ++i)
    if (t[static_cast<size_t>(i) * kTracePoints + kTraceEntry] != 0)
      rows.push_back(&t[static_cast<size_t>(i) * kTracePoints]);
  std::sort(rows.begin(), rows.end(),
            [](auto a, auto b) { return a[kTraceEntry] < b[kTraceEntry]; });
  if (rows.size() > static_cast<size_t>(calls)) rows.erase(rows.begin(), rows.end() - calls);
  // The timeline's points in order: the fused kernels' two between `reduced` and `end` where set.
  const int order[] = {kTraceEntry,   kTraceWaited, kTraceEpoch,      kTracePushed,
                       kTraceReduced, kTraceRowSum, kTraceNormStored, kTraceEnd};
  constexpr int kSteps = sizeof(order) / sizeof(order[0]) - 1;
  std::vector<double> d[kSteps], gap_entry, gap_waited, period;
  for (size_t i = 0; i < rows.size(); ++i) {
    const unsigned long long* row = rows[i];
    for (int k = 0, prev = 0; k < kSteps; ++k) {
      if (row[order[k + 1]] == 0) continue;  // a point this kernel does not mark
      d[k].push_back(static_cast<double>(row[order[k + 1]]) -
                     static_cast<double>(row[order[prev]]));
      prev = k + 1;
    }
    if (i + 1 < rows.size()) {
      gap_entry.push_back(double(rows[i + 1][kTraceEntry]) - double(row[kTraceEnd]));
      gap_waited.push_back(double(rows[i + 1][kTraceWaited]) - double(row[kTraceEnd]));
      period.push_back(double(rows[i + 1][kTraceWaited]) - double(row[kTraceWaited]));
    }
  }
  for (int m = 0; m < 2; ++m) {
    const auto stat = [m](const std::vector<double>& v) { return m == 0 ? median(v) : mean(v); };
    printf("%4d", r);
    for (int k = 0; k < kSteps; ++k)
      if (d[k].empty())
        printf(" %6s", "-");
      else
        printf(" %6.0f", stat(d[k]));
    printf(" | %15.0f %17.0f | %6.0f  %s\n", stat(gap_entry), stat(gap_waited), stat(period),
           m == 0 ? "median" : "mean");
  }
  // The timer ticks in coarse steps (256 ns on the H200): the means resolve below a step.
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tpcomm;
  // Whole numbers only (whole_number.h): "1e3" or "8x" is refused, not read as 1 or 8.
  unsigned long long bytes_arg = 1024, hidden_arg = 7168;
  int calls = 1000, ngpu = 0, n = 0;
  const char* mode = argc > 3 ? argv[3] : "oneshot";
  const bool numbers_ok = (argc <= 1 || bench::parseWhole(argv[1], 1, 1ull << 40, &bytes_arg)) &&
                          (argc <= 2 || bench::parseWholeInt(argv[2], 2, kTraceCalls, &calls)) &&
                          (argc <= 4 || bench::parseWholeInt(argv[4], 2, kTraceRanks, &n)) &&
                          (argc <= 5 || bench::parseWhole(argv[5], 1, 1ull << 20, &hidden_arg));
  const bool fused = strcmp(mode, "fused") == 0 || strcmp(mode, "fused_block") == 0;
  int algo = -1;
  for (int a : {tpcommAlgoOneShot, tpcommAlgoHostOneShot, tpcommAlgoHostBulk})
    if (strcmp(mode, tpcommAlgoName(a)) == 0) algo = a;
  if (!numbers_ok || argc > 6 || (algo < 0 && !fused)) {
    fprintf(stderr,
            "usage: trace-oneshot [bytes >= 1] [calls 2..%d] "
            "[oneshot|host_oneshot|host_bulk|fused|fused_block] [ranks 2..%d] [hidden >= 1]\n",
            kTraceCalls, kTraceRanks);
    return 2;
  }
  const size_t bytes = bytes_arg, hidden = hidden_arg;
  CK(cudaGetDeviceCount(&ngpu));
  if (argc <= 4) n = ngpu;
  const size_t rows = std::max<size_t>(1, bytes / (2 * hidden));
  if (ngpu < 1 || n < 2 || n > kTraceRanks) {
    fprintf(stderr, "trace-oneshot: needs a GPU and 2..%d ranks (%d GPUs seen)\n", kTraceRanks,
            ngpu);
    return 2;
  }
  std::vector<int> devs(n);
  for (int i = 0; i < n; ++i) devs[i] = i % ngpu;
  std::vector<tpcommComm_t> comms(n);
  tpcommConfig_t cfg = TPCOMM_CONFIG_INITIALIZER;
  if (!fused) cfg.algo = algo;
  if (strcmp(mode, "fused_block") == 0) cfg.launchKnobs = "fused_cluster=0";
  CK(tpcommCommInitAll(comms.data(), n, devs.data(), &cfg));
  const size_t call_bytes = fused ? rows * hidden * 2 : bytes;
  std::vector<void*> buf(n), res(n), gamma(n);
  std::vector<cudaStream_t> st(n);
  std::vector<cudaGraphExec_t> ex(n);
  for (int r = 0; r < n; ++r) {
    CK(cudaSetDevice(devs[r]));
    CK(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking));
    CK(cudaMalloc(&buf[r], 2 * call_bytes));
    CK(cudaMemset(buf[r], 0, 2 * call_bytes));
    CK(cudaMalloc(&res[r], 2 * call_bytes));
    CK(cudaMemset(res[r], 0, 2 * call_bytes));
    CK(cudaMalloc(&gamma[r], hidden * 2));
    CK(cudaMemset(gamma[r], 0, hidden * 2));
  }
  for (int r = 0; r < n; ++r) {
    CK(cudaSetDevice(devs[r]));
    CK(cudaDeviceSynchronize());
  }
  // Every capture ends before any is instantiated (global-mode captures refuse instantiation).
  std::vector<cudaGraph_t> graphs(n);
  tpcommRmsNormParams_t prm = TPCOMM_RMSNORM_PARAMS_INITIALIZER;
  for (int r = 0; r < n; ++r) {
    CK(cudaSetDevice(devs[r]));
    CK(cudaStreamBeginCapture(st[r], cudaStreamCaptureModeThreadLocal));
    char* out = static_cast<char*>(buf[r]) + call_bytes;
    char* res_out = static_cast<char*>(res[r]) + call_bytes;
    for (int i = 0; i < calls; ++i) {
      if (fused)
        CK(tpcommAllReduceAddRmsNorm(buf[r], res[r], res_out, out, gamma[r], rows, hidden,
                                     tpcommBfloat16, &prm, comms[r], st[r]));
      else
        CK(tpcommAllReduce(buf[r], out, bytes / 2, tpcommBfloat16, tpcommSum, comms[r], st[r]));
    }
    CK(cudaStreamEndCapture(st[r], &graphs[r]));
  }
  for (int r = 0; r < n; ++r) {
    CK(cudaSetDevice(devs[r]));
    CK(cudaGraphInstantiate(&ex[r], graphs[r], 0));
    CK(cudaGraphDestroy(graphs[r]));
  }
  for (int rep = 0; rep < 3; ++rep) {  // the last replay's stamps are the ones kept
    for (int r = 0; r < n; ++r) {
      CK(cudaSetDevice(devs[r]));
      CK(cudaGraphLaunch(ex[r], st[r]));
    }
    for (int r = 0; r < n; ++r) {
      CK(cudaSetDevice(devs[r]));
      CK(cudaStreamSynchronize(st[r]));
    }
  }
  tpcommCallInfo_t info{};
  CK(tpcommCommGetLastCall(comms[0], &info));
  printf(
      "# trace-oneshot: %s (%s, %d blocks), %d ranks on %d GPU(s)%s, %zu bytes, %d calls per "
      "graph, hidden %zu for fused; ns (thread 0 of block 0; fused `reduce`: until the grid's last "
      "warp has its sums)\n",
      mode, tpcommVariantName(info.variant), info.blocks, n, ngpu,
      n > ngpu ? " (ranks SHARE a GPU)" : "", call_bytes, calls, hidden);
  printf(
      "rank   wait  epoch   push reduce rowsum   norm    end | end->next entry  end->next "
      "waited | period\n");
  const size_t per_rank = static_cast<size_t>(kTraceCalls) * kTracePoints;
  std::vector<unsigned long long> t(kTraceRanks * per_rank);
  for (int d = 0; d < std::min(n, ngpu); ++d) {
    if (!readKernelTrace(d, t.data())) {
      fprintf(stderr, "trace-oneshot: no trace (build with -DTPCOMM_KERNEL_TRACE=ON)\n");
      return 2;
    }
    for (int r = 0; r < n; ++r)
      if (devs[r] == d) printRankRow(r, t.data() + r * per_rank, calls);
  }
  for (int r = 0; r < n; ++r) tpcommCommDestroy(comms[r]);
  return 0;
}
