// trace-oneshot: where the time of a small one-shot call goes, from the kernel's own timeline
// stamps (build with -DTPCOMM_KERNEL_TRACE=ON; src/kernels/trace_device.cuh). One process drives
// every visible GPU (one rank each), captures `calls` back-to-back all-reduces of `bytes` per rank
// into a CUDA graph, replays it, and prints per GPU the median time between the stamps of a call
// and from one call's end to the next call's start. The one-shot kernel also runs host_oneshot
// and host_bulk (the same kernel over host memory): name one as the third argument.
//   trace-oneshot [bytes=1024] [calls=1000] [oneshot|host_oneshot|host_bulk]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/trace.h"
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

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One GPU's row: the medians of the last `calls` calls' stamps (t: readKernelTrace's table).
void printGpuRow(int r, const std::vector<unsigned long long>& t, int calls) {
  using namespace tpcomm;
  std::vector<const unsigned long long*> rows;
  for (int i = 0; i < kTraceCalls; ++i)
    if (t[static_cast<size_t>(i) * kTracePoints + kTraceEntry] != 0)
      rows.push_back(&t[static_cast<size_t>(i) * kTracePoints]);
  std::sort(rows.begin(), rows.end(),
            [](auto a, auto b) { return a[kTraceEntry] < b[kTraceEntry]; });
  if (rows.size() > static_cast<size_t>(calls)) rows.erase(rows.begin(), rows.end() - calls);
  std::vector<double> d[kTracePoints - 1], gap_entry, gap_waited, period;
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int p = 1; p < kTracePoints; ++p)
      d[p - 1].push_back(static_cast<double>(rows[i][p]) - static_cast<double>(rows[i][p - 1]));
    if (i + 1 < rows.size()) {
      gap_entry.push_back(double(rows[i + 1][kTraceEntry]) - double(rows[i][kTraceEnd]));
      gap_waited.push_back(double(rows[i + 1][kTraceWaited]) - double(rows[i][kTraceEnd]));
      period.push_back(double(rows[i + 1][kTraceWaited]) - double(rows[i][kTraceWaited]));
    }
  }
  printf("%3d %5.0f %6.0f %6.0f %7.0f %5.0f | %15.0f %17.0f | %6.0f\n", r, median(d[0]),
         median(d[1]), median(d[2]), median(d[3]), median(d[4]), median(gap_entry),
         median(gap_waited), median(period));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tpcomm;
  const size_t bytes = argc > 1 ? strtoull(argv[1], nullptr, 0) : 1024;
  const int calls = argc > 2 ? atoi(argv[2]) : 1000;
  int algo = tpcommAlgoOneShot;
  if (argc > 3) {
    for (int a : {tpcommAlgoOneShot, tpcommAlgoHostOneShot, tpcommAlgoHostBulk})
      if (strcmp(argv[3], tpcommAlgoName(a)) == 0) algo = a;
    if (strcmp(argv[3], tpcommAlgoName(algo)) != 0) {
      fprintf(stderr, "trace-oneshot: %s is not oneshot, host_oneshot or host_bulk\n", argv[3]);
      return 2;
    }
  }
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n < 2 || calls < 2 || calls > kTraceCalls) {
    fprintf(stderr, "trace-oneshot: needs 2+ GPUs and 2 <= calls <= %d\n", kTraceCalls);
    return 2;
  }
  std::vector<int> devs(n);
  for (int i = 0; i < n; ++i) devs[i] = i;
  std::vector<tpcommComm_t> comms(n);
  tpcommConfig_t cfg = TPCOMM_CONFIG_INITIALIZER;
  cfg.algo = algo;
  CK(tpcommCommInitAll(comms.data(), n, devs.data(), &cfg));
  std::vector<void*> buf(n);
  std::vector<cudaStream_t> st(n);
  std::vector<cudaGraphExec_t> ex(n);
  for (int r = 0; r < n; ++r) {
    CK(cudaSetDevice(r));
    CK(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking));
    CK(cudaMalloc(&buf[r], 2 * bytes));
    CK(cudaMemset(buf[r], 0, 2 * bytes));
    CK(cudaDeviceSynchronize());
    CK(cudaStreamBeginCapture(st[r], cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < calls; ++i)
      CK(tpcommAllReduce(buf[r], static_cast<char*>(buf[r]) + bytes, bytes / 2, tpcommBfloat16,
                         tpcommSum, comms[r], st[r]));
    cudaGraph_t g;
    CK(cudaStreamEndCapture(st[r], &g));
    CK(cudaGraphInstantiate(&ex[r], g, 0));
    CK(cudaGraphDestroy(g));
  }
  for (int rep = 0; rep < 3; ++rep) {  // the last replay's stamps are the ones kept
    for (int r = 0; r < n; ++r) {
      CK(cudaSetDevice(r));
      CK(cudaGraphLaunch(ex[r], st[r]));
    }
    for (int r = 0; r < n; ++r) {
      CK(cudaSetDevice(r));
      CK(cudaStreamSynchronize(st[r]));
    }
  }
  printf("# trace-oneshot: %s, %d GPUs, %zu bytes, %d calls per graph; medians in ns\n",
         tpcommAlgoName(algo), n, bytes, calls);
  printf("gpu  wait  epoch   push  reduce   end | end->next entry  end->next waited | period\n");
  std::vector<unsigned long long> t(static_cast<size_t>(kTraceCalls) * kTracePoints);
  for (int r = 0; r < n; ++r) {
    if (!readKernelTrace(r, t.data())) {
      fprintf(stderr, "trace-oneshot: no trace (build with -DTPCOMM_KERNEL_TRACE=ON)\n");
      return 2;
    }
    printGpuRow(r, t, calls);
  }
  for (int r = 0; r < n; ++r) tpcommCommDestroy(comms[r]);
  return 0;
}
