// Communicators across machines, simulated on one: 2 "machines" x 2 ranks, one process per rank,
// each machine with its own TPCOMM_HOST_ID and every process with its own NCCL_HOSTID (so NCCL
// sees separate hosts and links them over loopback sockets), all on the lent GPU. Checks the
// hierarchical all-reduce (both variants forced), reduce-scatter, all-gather and a CUDA graph
// against an fp64 host reference and bit for bit across all four ranks, the counters, a machine
// that dies (a bounded tpcommTimeout on the other), and times hierarchical vs flat NCCL.
// Processes sharing a GPU time-slice: sizes and counts are small. If NCCL refuses the setup, the
// tests skip with NCCL's message.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/host_data.h"
#include "tests/gpu/harness.h"
#include "tests/gpu/multiprocess.h"
#include "transport/nccl_loader.h"

namespace tpcomm::test {
namespace {

constexpr int kNodes = 2, kLocal = 2, kWorld = kNodes * kLocal;
constexpr int kRefusedExit = 77;  // NCCL refused the simulated machines: the parent skips

// NCCL_HOSTID gives every process its own NCCL host hash, so NCCL's duplicate-GPU check (same
// host hash and bus id) never sees two ranks on the one GPU, and every pair goes over NET/Socket
// on loopback. NCCL_MNNVL_ENABLE=0: a multi-node NVLink clique would merge the hosts back into
// one NVLink domain, where the GPU appears twice.
std::vector<std::string> machineEnv(int rank) {
  return {"TPCOMM_HOST_ID=simnode-" + std::to_string(rank / kLocal),
          "NCCL_HOSTID=simhost-" + std::to_string(rank), "NCCL_SOCKET_IFNAME=lo",
          "NCCL_IB_DISABLE=1", "NCCL_MNNVL_ENABLE=0"};
}

// Bounds of the children's waits, well inside the parent's (kChildrenSeconds): a hang costs a
// minute, not the suite's whole step.
constexpr int kExchangeMs = 30000;
constexpr int kChildrenSeconds = 60;

uint64_t fnv(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

bool waitFor(const std::string& path, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    if (access(path.c_str(), F_OK) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The framework's all-gather of handle bytes, through files.
bool exchange(const std::string& dir, const std::string& round, int rank, int nranks,
              const void* mine, size_t bytes, void* all) {
  const std::string base = dir + "/" + round + "_";
  {
    std::ofstream f(base + std::to_string(rank) + ".tmp", std::ios::binary);
    f.write(static_cast<const char*>(mine), static_cast<std::streamsize>(bytes));
  }
  rename((base + std::to_string(rank) + ".tmp").c_str(), (base + std::to_string(rank)).c_str());
  for (int r = 0; r < nranks; ++r) {
    const std::string p = base + std::to_string(r);
    if (!waitFor(p, kExchangeMs)) return false;
    std::ifstream f(p, std::ios::binary);
    f.read(static_cast<char*>(all) + r * bytes, static_cast<std::streamsize>(bytes));
  }
  return true;
}

// The hierarchical sum rounds each machine's partial sum to the datatype before NCCL adds the
// machines' sums: one more rounding, bounded by the datatype's epsilon of the sum of |x|.
size_t wrongHierarchical(tpcommDataType_t dt, size_t count, const uint8_t* got, const uint8_t* ref,
                         const std::vector<std::vector<uint8_t>>& inputs, size_t offset) {
  const size_t es = elemSize(dt);
  const double eps = dt == tpcommFloat32 ? 0x1p-23 : 0x1p-7;
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    const double g = toDouble(dt, got + i * es), r = toDouble(dt, ref + i * es);
    double abs_sum = 0;
    for (const auto& in : inputs) abs_sum += std::fabs(toDouble(dt, in.data() + (offset + i) * es));
    if (!(std::fabs(g - r) <= eps * std::fabs(r) + 2 * eps * abs_sum + 1e-30)) ++bad;
  }
  return bad;
}

struct Child {
  int rank = 0;
  tpcommComm_t comm = nullptr;
  cudaStream_t s = nullptr;
  std::string report;
  int rc = 0;

  void say(const char* fmt, const std::string& what) {
    fprintf(stderr, fmt, rank, what.c_str());
    rc = 1;
  }
  bool ok(tpcommResult_t r, const char* what) {
    if (r == tpcommSuccess) return true;
    fprintf(stderr, "rank %d: %s: %s\n", rank, what, tpcommGetLastError());
    rc = 1;
    return false;
  }
};

std::vector<uint8_t> download(const void* d, size_t bytes) {
  std::vector<uint8_t> h(bytes);
  cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost);
  return h;
}

void allReduceCase(Child& c, tpcommDataType_t dt, size_t count, const char* want_shape) {
  const size_t es = elemSize(dt), bytes = count * es;
  std::vector<std::vector<uint8_t>> inputs;
  for (int r = 0; r < kWorld; ++r) inputs.push_back(makeInput(dt, count, 77 + count, r));
  void *in = nullptr, *out = nullptr;
  cudaMalloc(&in, bytes);
  cudaMalloc(&out, bytes);
  cudaMemcpy(in, inputs[c.rank].data(), bytes, cudaMemcpyHostToDevice);
  cudaMemset(out, 0xCD, bytes);
  cudaDeviceSynchronize();
  if (c.ok(tpcommAllReduce(in, out, count, dt, tpcommSum, c.comm, c.s), "tpcommAllReduce")) {
    cudaStreamSynchronize(c.s);
    const auto got = download(out, bytes);
    const auto ref = reference(dt, count, inputs);
    const size_t wrong = wrongHierarchical(dt, count, got.data(), ref.data(), inputs, 0);
    tpcommCallInfo_t info{};
    tpcommCommGetLastCall(c.comm, &info);
    if (wrong) c.say("rank %d: all-reduce wrong: %s\n", std::to_string(wrong) + " elements");
    if (!strstr(info.reason, want_shape))
      c.say("rank %d: expected another shape: %s\n", info.reason);
    char line[128];
    snprintf(line, sizeof(line), "ar %s %zu %016llx\n", dtypeName(dt), count,
             static_cast<unsigned long long>(fnv(got.data(), got.size())));
    c.report += line;
  }
  cudaFree(in);
  cudaFree(out);
}

// Reduce-scatter (digests differ per rank by nature: not reported) and all-gather (reported).
void halfCases(Child& c, tpcommDataType_t dt, size_t count) {
  const size_t es = elemSize(dt), whole = kWorld * count;
  std::vector<std::vector<uint8_t>> inputs;
  for (int r = 0; r < kWorld; ++r) inputs.push_back(makeInput(dt, whole, 99 + count, r));
  void *big = nullptr, *part = nullptr;
  cudaMalloc(&big, whole * es);
  cudaMalloc(&part, count * es);
  cudaMemcpy(big, inputs[c.rank].data(), whole * es, cudaMemcpyHostToDevice);
  cudaDeviceSynchronize();
  if (c.ok(tpcommReduceScatter(big, part, count, dt, c.comm, c.s), "tpcommReduceScatter")) {
    cudaStreamSynchronize(c.s);
    const auto got = download(part, count * es);
    const auto ref = reference(dt, whole, inputs);
    const size_t wrong = wrongHierarchical(dt, count, got.data(), ref.data() + c.rank * count * es,
                                           inputs, c.rank * count);
    if (wrong) c.say("rank %d: reduce-scatter wrong: %s\n", std::to_string(wrong) + " elements");
  }
  // All-gather: each rank's segment r of its input is its contribution.
  cudaMemcpy(part, inputs[c.rank].data() + c.rank * count * es, count * es, cudaMemcpyHostToDevice);
  cudaMemset(big, 0xCD, whole * es);
  cudaDeviceSynchronize();
  if (c.ok(tpcommAllGather(part, big, count, dt, c.comm, c.s), "tpcommAllGather")) {
    cudaStreamSynchronize(c.s);
    const auto got = download(big, whole * es);
    for (int r = 0; r < kWorld; ++r)
      if (memcmp(got.data() + r * count * es, inputs[r].data() + r * count * es, count * es))
        c.say("rank %d: all-gather segment wrong: %s\n", std::to_string(r));
    char line[128];
    snprintf(line, sizeof(line), "ag %s %zu %016llx\n", dtypeName(dt), count,
             static_cast<unsigned long long>(fnv(got.data(), got.size())));
    c.report += line;
  }
  cudaFree(big);
  cudaFree(part);
}

void graphCase(Child& c) {
  const tpcommDataType_t dt = tpcommBfloat16;
  const size_t count = 8192, bytes = count * 2;
  std::vector<std::vector<uint8_t>> inputs;
  for (int r = 0; r < kWorld; ++r) inputs.push_back(makeInput(dt, count, 5, r));
  void *in = nullptr, *out = nullptr;
  cudaMalloc(&in, bytes);
  cudaMalloc(&out, bytes);
  cudaMemcpy(in, inputs[c.rank].data(), bytes, cudaMemcpyHostToDevice);
  cudaDeviceSynchronize();
  cudaGraph_t g = nullptr;
  cudaGraphExec_t ge = nullptr;
  cudaStreamBeginCapture(c.s, cudaStreamCaptureModeGlobal);
  const tpcommResult_t r = tpcommAllReduce(in, out, count, dt, tpcommSum, c.comm, c.s);
  cudaStreamEndCapture(c.s, &g);
  if (c.ok(r, "captured tpcommAllReduce") && g && cudaGraphInstantiate(&ge, g, 0) == cudaSuccess) {
    for (int i = 0; i < 3; ++i) {
      cudaMemset(out, 0xCD, bytes);
      cudaDeviceSynchronize();
      cudaGraphLaunch(ge, c.s);
      cudaStreamSynchronize(c.s);
    }
    const auto got = download(out, bytes);
    const auto ref = reference(dt, count, inputs);
    if (const size_t w = wrongHierarchical(dt, count, got.data(), ref.data(), inputs, 0))
      c.say("rank %d: graph replay wrong: %s\n", std::to_string(w) + " elements");
    char line[96];
    snprintf(line, sizeof(line), "graph %016llx\n",
             static_cast<unsigned long long>(fnv(got.data(), got.size())));
    c.report += line;
  } else if (c.rc == 0) {
    c.say("rank %d: graph: %s\n", "capture or instantiate failed");
  }
  if (ge) cudaGraphExecDestroy(ge);
  if (g) cudaGraphDestroy(g);
  cudaFree(in);
  cudaFree(out);
}

// Flat NCCL over the four ranks next to the hierarchical call, same buffers, same run.
void benchCase(Child& c, const std::string& dir) {
  const NcclApi* api = ncclApi(nullptr);
  ncclUniqueId id{};
  if (c.rank == 0) api->getUniqueId(&id);
  std::vector<ncclUniqueId> ids(kWorld);
  if (!exchange(dir, "flat", c.rank, kWorld, &id, sizeof(id), ids.data()))
    return c.say("rank %d: %s\n", "the flat NCCL id exchange timed out");
  ncclComm_t flat = nullptr;
  if (api->commInitRank(&flat, kWorld, ids[0], c.rank) != ncclSuccess)
    return c.say("rank %d: flat NCCL init failed: %s\n", api->getLastError(nullptr));
  for (size_t bytes : {size_t{4096}, size_t{65536}, size_t{262144}}) {
    const size_t count = bytes / 2;
    void* buf = nullptr;
    cudaMalloc(&buf, bytes);
    cudaMemset(buf, 0, bytes);
    cudaDeviceSynchronize();
    auto time = [&](auto call) {
      for (int i = 0; i < 3; ++i) call();
      cudaStreamSynchronize(c.s);
      const auto t0 = std::chrono::steady_clock::now();
      constexpr int kIters = 20;
      for (int i = 0; i < kIters; ++i) call();
      cudaStreamSynchronize(c.s);
      return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                 .count() /
             kIters;
    };
    const double hier =
        time([&] { tpcommAllReduce(buf, buf, count, tpcommBfloat16, tpcommSum, c.comm, c.s); });
    const double nccl =
        time([&] { api->allReduce(buf, buf, count, ncclBfloat16, ncclSum, flat, c.s); });
    if (c.rank == 0)
      printf(
          "multinode bench, bf16 %zu B: hierarchical %.1f us, flat NCCL %.1f us (simulated: "
          "loopback sockets and one time-sliced GPU; says nothing about real IB/RoCE)\n",
          bytes, hier, nccl);
    cudaFree(buf);
  }
  api->commDestroy(flat);
}

}  // namespace

int runMultinodeChild(const std::string& scenario, int rank, int nranks, const tpcommUniqueId& id,
                      const std::string& dir) {
  Child c;
  c.rank = rank;
  cudaSetDevice(rank % visibleGpus());
  if (scenario == "mn-socket") {
    // The Unix-socket rendezvous is one machine's: ranks of two host ids are refused.
    tpcommComm_t comm = nullptr;
    const tpcommResult_t r = tpcommCommInitRank(&comm, nranks, id, rank, nullptr);
    const bool refused = r == tpcommInvalidUsage && comm == nullptr &&
                         strstr(tpcommGetLastError(), "tpcommCommNodeLinkBegin/End");
    printf("rank %d: tpcommCommInitRank over two host ids: %d %s\n", rank, r, tpcommGetLastError());
    std::ofstream(dir + "/rank" + std::to_string(rank) + ".txt") << (refused ? "refused\n" : "");
    return refused ? 0 : 1;
  }
  cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking);
  tpcommConfig_t cfg = TPCOMM_CONFIG_INITIALIZER;
  cfg.timeoutMs = scenario == "mn-deadnode" ? 2000 : 20000;
  cfg.initTimeoutMs = kExchangeMs;
  tpcommRankHandle mine;
  std::vector<tpcommRankHandle> all(static_cast<size_t>(nranks));
  if (!c.ok(tpcommCommInitRankBegin(&c.comm, nranks, rank, &cfg, &mine), "Begin")) return 1;
  if (!exchange(dir, "init", rank, nranks, &mine, sizeof(mine), all.data())) return 4;
  if (!c.ok(tpcommCommInitRankEnd(c.comm, all.data()), "End")) return 1;
  int nodes = 0, local = 0;
  tpcommCommNodes(c.comm, &nodes, &local);
  if (nodes != kNodes || local != kLocal) {
    fprintf(stderr, "rank %d: %d nodes of %d ranks, expected %d of %d\n", rank, nodes, local,
            kNodes, kLocal);
    return 1;
  }
  if (!c.ok(tpcommCommNodeLinkBegin(c.comm, &mine), "NodeLinkBegin")) return 1;
  if (!exchange(dir, "link", rank, nranks, &mine, sizeof(mine), all.data())) return 4;
  const tpcommResult_t linked = tpcommCommNodeLinkEnd(c.comm, all.data());
  if (linked != tpcommSuccess) {
    // NCCL's refusal (its message carried in tpcommNcclError) skips; anything else is a failure.
    std::ofstream(dir + "/rank" + std::to_string(rank) + ".txt")
        << "NodeLinkEnd: " << tpcommGetLastError() << "\n";
    fprintf(stderr, "rank %d: NodeLinkEnd: %s\n", rank, tpcommGetLastError());
    return linked == tpcommNcclError ? kRefusedExit : 1;
  }
  if (scenario == "mn-deadnode") {
    // One call together first: NCCL connects its peers at the first collective, and the
    // machine must die in the middle of a call, not before NCCL ever reached it.
    void* warm = nullptr;
    cudaMalloc(&warm, 1 << 20);
    if (!c.ok(tpcommAllReduce(warm, warm, 1 << 18, tpcommFloat32, tpcommSum, c.comm, c.s),
              "warm-up"))
      return 1;
    cudaStreamSynchronize(c.s);
    // A rank's stream can finish its NCCL leg while NCCL's proxy thread still sends the last
    // chunk to the peer: the machine dies only once the survivors have their warm-up results.
    std::ofstream(dir + "/warm" + std::to_string(rank));
    if (rank / kLocal == 1) {
      for (int r = 0; r < kLocal; ++r) waitFor(dir + "/warm" + std::to_string(r), kExchangeMs);
      std::ofstream(dir + "/rank" + std::to_string(rank) + ".txt") << "died\n";
      _exit(0);  // a machine that goes away: no destroy, no goodbye
    }
    waitFor(dir + "/rank2.txt", kExchangeMs);
    waitFor(dir + "/rank3.txt", kExchangeMs);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    void* buf = nullptr;
    cudaMalloc(&buf, 1 << 20);
    const auto t0 = std::chrono::steady_clock::now();
    // The call itself may already fail (NCCL saw the sockets close while it enqueued), or it is
    // enqueued and the watchdog ends it after timeoutMs: both are bounded errors.
    const tpcommResult_t call =
        tpcommAllReduce(buf, buf, 1 << 18, tpcommFloat32, tpcommSum, c.comm, c.s);
    cudaStreamSynchronize(c.s);
    tpcommResult_t async = call == tpcommSuccess ? tpcommSuccess : call;
    for (int i = 0; i < 100 && async == tpcommSuccess; ++i) {
      tpcommCommGetAsyncError(c.comm, &async);
      if (async == tpcommSuccess) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    printf(
        "rank %d: the other machine died: call %d, error %d after %.0f ms (timeout 2000 ms): "
        "%s\n",
        rank, call, async, ms, tpcommGetLastError());
    const bool bounded =
        (async == tpcommTimeout || (call == tpcommNcclError && async == call)) && ms < 2000 + 8000;
    c.report = bounded ? "bounded\n" : "unbounded\n";
    if (!bounded) c.rc = 1;
    std::ofstream(dir + "/rank" + std::to_string(rank) + ".txt") << c.report;
    _exit(c.rc);  // the aborted link and its peers' staging: nothing to tear down cleanly
  }
  const bool small = scenario == "mn-small";
  if (scenario == "mn-bench") {
    benchCase(c, dir);
  } else {
    for (tpcommDataType_t dt : {tpcommBfloat16, tpcommFloat32})
      for (size_t count : {size_t{1}, size_t{1000}, size_t{4097}, size_t{131072 / elemSize(dt)},
                           size_t{262144 / elemSize(dt) + 1}})
        allReduceCase(c, dt, count, small ? "(small" : "(large");
    for (tpcommDataType_t dt : {tpcommBfloat16, tpcommFloat32})
      for (size_t count : {size_t{1000}, size_t{4097}}) halfCases(c, dt, count);
    graphCase(c);
    uint64_t legs = 0;
    tpcommStats_t st{};
    tpcommCommGetNodeLinkCalls(c.comm, &legs);
    tpcommCommGetStats(c.comm, &st);
    if (legs == 0 || st.fallbacks != 0 || st.calls[tpcommAlgoNccl] != legs)
      c.say("rank %d: counters: %s\n", "links " + std::to_string(legs) + ", fallbacks " +
                                           std::to_string(st.fallbacks) + ", nccl calls " +
                                           std::to_string(st.calls[tpcommAlgoNccl]));
  }
  std::ofstream(dir + "/rank" + std::to_string(rank) + ".txt") << c.report;
  tpcommCommDestroy(c.comm);
  cudaStreamDestroy(c.s);
  return c.rc;
}

namespace {

// Runs a scenario over the simulated machines; skips when NCCL refused them.
ChildRun runMachines(const std::string& scenario, const std::vector<std::string>& env = {}) {
  return spawnChildren(scenario, kWorld, kChildrenSeconds, env, machineEnv);
}

bool refused(const ChildRun& run, std::string* why) {
  for (size_t r = 0; r < run.exit_codes.size(); ++r)
    if (run.exit_codes[r] == kRefusedExit) {
      *why = run.reports[r];
      return true;
    }
  return false;
}

void expectAgreed(const ChildRun& run) {
  ASSERT_FALSE(run.timed_out) << "children did not finish";
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(run.exit_codes[r], 0) << "rank " << r;
  ASSERT_FALSE(run.reports[0].empty());
  printf("digests (every rank):\n%s", run.reports[0].c_str());
  for (int r = 1; r < kWorld; ++r)
    EXPECT_EQ(run.reports[r], run.reports[0]) << "rank " << r << " output digests differ";
}

#define SKIP_IF_REFUSED(run)                                                                  \
  do {                                                                                        \
    std::string why_;                                                                         \
    if (refused(run, &why_)) GTEST_SKIP() << "NCCL refused the simulated machines: " << why_; \
  } while (0)

TEST(MultiNode, LargeVariantMatchesTheReferenceOnEveryRank) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const ChildRun run = runMachines("mn-large", {"TPCOMM_KNOBS=node_small_bytes=0"});
  SKIP_IF_REFUSED(run);
  expectAgreed(run);
}

TEST(MultiNode, SmallVariantMatchesTheReferenceOnEveryRank) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const ChildRun run = runMachines("mn-small", {"TPCOMM_KNOBS=node_small_bytes=1073741824"});
  SKIP_IF_REFUSED(run);
  expectAgreed(run);
}

TEST(MultiNode, AMachineThatDiesIsATimeoutOnTheOther) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const ChildRun run = runMachines("mn-deadnode", {"TPCOMM_KNOBS=node_small_bytes=0"});
  SKIP_IF_REFUSED(run);
  ASSERT_FALSE(run.timed_out);
  for (int r = 0; r < kLocal; ++r) {
    EXPECT_EQ(run.exit_codes[r], 0) << "rank " << r << ": " << run.reports[r];
    EXPECT_EQ(run.reports[r], "bounded\n");
  }
}

TEST(MultiNode, TheSocketRendezvousRefusesTwoHostIds) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const ChildRun run = spawnChildren("mn-socket", 2, kChildrenSeconds, {}, [](int r) {
    return std::vector<std::string>{"TPCOMM_HOST_ID=simnode-" + std::to_string(r)};
  });
  ASSERT_FALSE(run.timed_out);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(run.exit_codes[r], 0) << "rank " << r;
    EXPECT_EQ(run.reports[r], "refused\n") << "rank " << r;
  }
}

TEST(MultiNode, BenchHierarchicalVsFlatNccl) {
  if (visibleGpus() == 0) GTEST_SKIP() << "no GPU";
  const ChildRun run = runMachines("mn-bench");
  SKIP_IF_REFUSED(run);
  ASSERT_FALSE(run.timed_out);
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(run.exit_codes[r], 0) << "rank " << r;
}

}  // namespace
}  // namespace tpcomm::test
