// tpcomm-enqueue-cost: the host time an eager tpcommAllReduce call costs its caller, on one
// stream and alternating between two streams per call (the stream-order path), per size. Eager
// calls are bound by that host time once it exceeds the kernel's, and timing them on the GPU
// (tpcomm-bench --mode eager) mixes it with clocks and the ranks' skew. Only the public C API is
// used, so the one binary runs against any libtpcomm.so of the same soname (LD_LIBRARY_PATH): an
// old and a new build compare in one run.
//   tpcomm-enqueue-cost [--ranks 2] [--calls 100] [--bursts 41] [--transport host] [--streams 2]
// (--streams 1: the one-stream column only, for a library that does not order two streams.)
// One process drives every rank on GPU 0 (ranks share it); a burst is `calls` calls per rank,
// issued rank after rank, timed on the host around the issuing loop only, then synchronized.
// Prints the median and the quartiles over bursts, in us per call.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/whole_number.h"
#include "tpcomm/tpcomm.h"

namespace {

#define CHECK_CUDA(x)                                                                     \
  do {                                                                                    \
    const cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                              \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)
#define CHECK_TPCOMM(x)                                                                 \
  do {                                                                                  \
    if ((x) != tpcommSuccess) {                                                         \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, tpcommGetLastError()); \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

struct Options {
  int ranks = 2, calls = 100, bursts = 41, streams = 2;
  std::vector<size_t> sizes{1024, 16384, 1048576};
};

// Numbers are whole and in range (whole_number.h): "--calls 1e3" or "--ranks 2x" is refused, not
// read as 1 or 2, and an option without its value is refused, not dropped.
Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      fprintf(stderr, "tpcomm-enqueue-cost: %s needs a value\n", a.c_str());
      exit(2);
    }
    const char* value = argv[i + 1];
    int* number = a == "--ranks"     ? &o.ranks
                  : a == "--calls"   ? &o.calls
                  : a == "--bursts"  ? &o.bursts
                  : a == "--streams" ? &o.streams
                                     : nullptr;
    if (a == "--transport") {
      setenv("TPCOMM_TRANSPORT", value, 1);
    } else if (number == nullptr) {
      fprintf(stderr, "tpcomm-enqueue-cost: unknown option %s\n", a.c_str());
      exit(2);
    } else if (!tpcomm::bench::parseWholeInt(value, 1, 1 << 20, number)) {
      fprintf(stderr, "tpcomm-enqueue-cost: %s %s is not a whole number in 1..%d\n", a.c_str(),
              value, 1 << 20);
      exit(2);
    }
  }
  if (o.ranks < 2 || o.streams > 2) {
    fprintf(stderr, "tpcomm-enqueue-cost: --ranks >= 2, --streams 1 or 2\n");
    exit(2);
  }
  return o;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const size_t max_bytes = *std::max_element(o.sizes.begin(), o.sizes.end());
  std::vector<int> devs(o.ranks, 0);
  std::vector<tpcommComm_t> comms(o.ranks);
  CHECK_TPCOMM(tpcommCommInitAll(comms.data(), o.ranks, devs.data(), nullptr));
  std::vector<void*> send(o.ranks), recv(o.ranks);
  std::vector<cudaStream_t> s1(o.ranks), s2(o.ranks);
  CHECK_CUDA(cudaSetDevice(0));
  for (int r = 0; r < o.ranks; ++r) {
    CHECK_CUDA(cudaMalloc(&send[r], max_bytes));
    CHECK_CUDA(cudaMalloc(&recv[r], max_bytes));
    CHECK_CUDA(cudaMemset(send[r], 0, max_bytes));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s1[r], cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s2[r], cudaStreamNonBlocking));
  }
  printf(
      "# tpcomm-enqueue-cost: %d ranks on GPU 0, %d calls per rank a burst, %d bursts; host us "
      "per call (median [q1, q3])\n",
      o.ranks, o.calls, o.bursts);
  printf("%10s | %-24s | %-24s\n", "bytes", "one stream", "two streams, alternating");
  for (size_t bytes : o.sizes) {
    const size_t count = bytes / 2;  // bf16
    double med[2] = {}, q1[2] = {}, q3[2] = {};
    for (int two = 0; two < o.streams; ++two) {
      std::vector<double> us;
      for (int b = 0; b < o.bursts + 3; ++b) {  // three warm-up bursts
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < o.calls; ++i)
          for (int r = 0; r < o.ranks; ++r)
            CHECK_TPCOMM(tpcommAllReduce(send[r], recv[r], count, tpcommBfloat16, tpcommSum,
                                         comms[r], two && i % 2 ? s2[r] : s1[r]));
        const auto t1 = std::chrono::steady_clock::now();
        CHECK_CUDA(cudaDeviceSynchronize());
        if (b >= 3)
          us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() /
                       (o.calls * o.ranks));
      }
      med[two] = quantile(us, 0.5);
      q1[two] = quantile(us, 0.25);
      q3[two] = quantile(us, 0.75);
    }
    printf("%10zu | %6.3f [%6.3f, %6.3f]   | %6.3f [%6.3f, %6.3f]\n", bytes, med[0], q1[0], q3[0],
           med[1], q1[1], q3[1]);
  }
  for (int r = 0; r < o.ranks; ++r) {
    tpcommResult_t async = tpcommSuccess;
    CHECK_TPCOMM(tpcommCommGetAsyncError(comms[r], &async));
    if (async != tpcommSuccess) {
      fprintf(stderr, "rank %d: async error %d\n", r, static_cast<int>(async));
      return 1;
    }
    CHECK_TPCOMM(tpcommCommDestroy(comms[r]));
  }
  return 0;
}
