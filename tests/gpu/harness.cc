#include "tests/gpu/harness.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include <cstring>

namespace tpcomm::test {

int visibleGpus() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

Group::~Group() {
  for (size_t r = 0; r < comms.size(); ++r) {
    if (comms[r]) tpcommCommDestroy(comms[r]);
  }
  for (size_t r = 0; r < devs.size(); ++r) {
    cudaSetDevice(devs[r]);
    if (r < streams.size() && streams[r]) cudaStreamDestroy(streams[r]);
    if (r < send.size() && send[r]) cudaFree(send[r]);
    if (r < recv.size() && recv[r]) cudaFree(recv[r]);
  }
}

int maxTestWorld() {
  const char* s = getenv("TPCOMM_TEST_MAX_WORLD");
  const int w = s ? atoi(s) : 0;
  return w >= 2 ? w : 8;
}

bool Group::distinctGpus() const {
  for (size_t a = 0; a < devs.size(); ++a)
    for (size_t b = a + 1; b < devs.size(); ++b)
      if (devs[a] == devs[b]) return false;
  return true;
}

tpcommConfig_t configFor(int algo, int max_blocks, int timeout_ms) {
  tpcommConfig_t cfg = TPCOMM_CONFIG_INITIALIZER;
  cfg.algo = algo;
  cfg.maxBlocks = max_blocks;
  // Under compute-sanitizer the kernels run many times slower, and ranks sharing a GPU wait for
  // each other past a test's timeout (run_suite.sh sets the scale for its sanitizer steps).
  const char* scale = getenv("TPCOMM_TEST_TIMEOUT_SCALE");
  const int k = scale ? atoi(scale) : 1;
  cfg.timeoutMs = k > 1 ? timeout_ms * k : timeout_ms;
  if (algo != tpcommAlgoAuto && algo != tpcommAlgoNccl) cfg.ncclMode = tpcommNcclOff;
  return cfg;
}

std::unique_ptr<Group> makeGroup(int world, const tpcommConfig_t* cfg, size_t capacity,
                                 std::string* err) {
  const int ngpu = visibleGpus();
  if (ngpu == 0) {
    *err = "no GPU";
    return nullptr;
  }
  auto g = std::make_unique<Group>();
  g->world = world;
  g->capacity = capacity;
  for (int r = 0; r < world; ++r) g->devs.push_back(r % ngpu);
  g->comms.assign(world, nullptr);
  if (tpcommCommInitAll(g->comms.data(), world, g->devs.data(), cfg) != tpcommSuccess) {
    *err = tpcommGetLastError();
    g->comms.assign(world, nullptr);
    return nullptr;
  }
  g->streams.assign(world, nullptr);
  g->send.assign(world, nullptr);
  g->recv.assign(world, nullptr);
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(g->devs[r]);
    if (cudaStreamCreateWithFlags(&g->streams[r], cudaStreamNonBlocking) != cudaSuccess ||
        (capacity && (cudaMalloc(&g->send[r], capacity + 256) != cudaSuccess ||
                      cudaMalloc(&g->recv[r], capacity + 256) != cudaSuccess))) {
      *err = "cuda allocation failed";
      return nullptr;
    }
  }
  return g;
}

std::string Outcome::describe() const {
  if (result != tpcommSuccess) return "error " + std::to_string(result) + ": " + error;
  return "wrong=" + std::to_string(wrong) + " (first at " + std::to_string(first_wrong) +
         "), ranks_agree=" + (ranks_agree ? "yes" : "no");
}

std::string caseName(const Case& c, int algo, int world) {
  return std::string(tpcommAlgoName(algo)) + " world=" + std::to_string(world) + " " +
         dtypeName(c.dtype) + " count=" + std::to_string(c.count) +
         (c.in_place ? " in-place" : " out-of-place") + " offset=" + std::to_string(c.offset_elems);
}

::testing::AssertionResult drained(Group& g, int r) {
  cudaSetDevice(g.devs[r]);
  const cudaError_t e = cudaStreamSynchronize(g.streams[r]);
  if (e != cudaSuccess)
    return ::testing::AssertionFailure() << "rank " << r << ": " << cudaGetErrorString(e);
  tpcommResult_t async = tpcommSuccess;
  tpcommCommGetAsyncError(g.comms[r], &async);
  if (async != tpcommSuccess)
    return ::testing::AssertionFailure()
           << "rank " << r << ": asynchronous error " << tpcommGetErrorString(async);
  return ::testing::AssertionSuccess();
}

Outcome runCase(Group& g, const Case& c) {
  Outcome o;
  const size_t es = elemSize(c.dtype);
  const size_t bytes = c.count * es;
  const size_t off = c.offset_elems * es;
  if (bytes + off > g.capacity + 256) {
    o.result = tpcommInternalError;
    o.error = "test buffer too small";
    return o;
  }
  std::vector<std::vector<uint8_t>> inputs;
  for (int r = 0; r < g.world; ++r) {
    inputs.push_back(makeInput(c.dtype, c.count, c.seed, r));
    cudaSetDevice(g.devs[r]);
    cudaMemcpy(g.send[r] + off, inputs.back().data(), bytes, cudaMemcpyHostToDevice);
    if (!c.in_place) cudaMemset(g.recv[r], 0xCD, g.capacity + 256);  // poison the output
    // The memset runs on the legacy stream, which does not order the communicator's
    // non-blocking stream: without this wait it may land after the kernel's outputs.
    cudaDeviceSynchronize();
  }
  tpcommGroupStart();
  for (int r = 0; r < g.world && o.result == tpcommSuccess; ++r) {
    char* in = g.send[r] + off;
    char* out = c.in_place ? in : g.recv[r] + off;
    o.result = tpcommAllReduce(in, out, c.count, c.dtype, tpcommSum, g.comms[r], g.streams[r]);
    if (o.result != tpcommSuccess) o.error = tpcommGetLastError();
  }
  tpcommGroupEnd();
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    const cudaError_t e = cudaStreamSynchronize(g.streams[r]);
    if (e != cudaSuccess && o.result == tpcommSuccess) {
      o.result = tpcommUnhandledCudaError;
      o.error = cudaGetErrorString(e);
    }
    tpcommResult_t async = tpcommSuccess;
    tpcommCommGetAsyncError(g.comms[r], &async);
    if (async != tpcommSuccess && o.result == tpcommSuccess) {
      o.result = async;
      o.error = "async error on rank " + std::to_string(r);
    }
  }
  if (o.result != tpcommSuccess) return o;
  const std::vector<uint8_t> ref = reference(c.dtype, c.count, inputs);
  std::vector<uint8_t> got(bytes), first;
  for (int r = 0; r < g.world; ++r) {
    cudaSetDevice(g.devs[r]);
    const char* out = (c.in_place ? g.send[r] : g.recv[r]) + off;
    cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost);
    size_t fw = 0;
    const size_t w = countWrong(c.dtype, c.count, got.data(), ref.data(), inputs, &fw);
    if (w && !o.wrong) o.first_wrong = fw;
    o.wrong += w;
    if (r == 0)
      first = got;
    else if (memcmp(first.data(), got.data(), bytes) != 0)
      o.ranks_agree = false;
  }
  if (!c.in_place) {  // nothing written outside [off, off + bytes)
    std::vector<uint8_t> guard(off);
    for (int r = 0; r < g.world && off; ++r) {
      cudaSetDevice(g.devs[r]);
      cudaMemcpy(guard.data(), g.recv[r], off, cudaMemcpyDeviceToHost);
      for (uint8_t b : guard)
        if (b != 0xCD) {
          o.wrong += 1;
          break;
        }
    }
    uint8_t tail[16];
    for (int r = 0; r < g.world; ++r) {
      cudaSetDevice(g.devs[r]);
      cudaMemcpy(tail, g.recv[r] + off + bytes, sizeof(tail), cudaMemcpyDeviceToHost);
      for (uint8_t b : tail)
        if (b != 0xCD) {
          o.wrong += 1;
          break;
        }
    }
  }
  return o;
}

}  // namespace tpcomm::test
