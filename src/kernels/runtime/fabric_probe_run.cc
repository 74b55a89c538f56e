#include "kernels/runtime/fabric_probe_run.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <utility>

#include "common/log.h"
#include "common/str_format.h"
#include "kernels/runtime/fabric_probe_kernels.h"
#include "topo/probe/stream_wait.h"

namespace tpcomm {
namespace topo {
namespace {

// Bytes each GPU moves per measurement: ~0.6 ms at a healthy PCIe Gen5 link's 53 GB/s, 12 ms at a
// collapsed 2.7 GB/s, so even a collapsing 8-GPU box stays well inside the budget.
constexpr size_t kBytes = 32u << 20;
constexpr int kPingRounds = 200;
constexpr int kMeasureMs = 1000;  // one measurement's deadline at most (inside the budget)

struct Rank {
  int dev = 0;
  void* buf = nullptr;  // kBytes: what the others store into, load from and copy into
  void* sink = nullptr;
  unsigned* flag = nullptr;  // this rank's ping-pong flag (in its GPU's memory)
  unsigned long long* result = nullptr;
  cudaStream_t s = nullptr, s2 = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  int blocks = 1;
};

// Everything the probe allocates, released on every path except after a stuck measurement
// (freeing memory a hung kernel or copy still targets would wait for it, i.e. hang the caller).
struct Session {
  std::vector<Rank> ranks;
  void* host = nullptr;  // pinned, mapped: kBytes + two flags
  void* host_dev = nullptr;
  std::vector<std::pair<int, int>> enabled;  // (device, peer) whose access this probe enabled
  ProbeClock::time_point end;                // the budget
  std::string error;
  bool stuck = false;

  ~Session() {
    if (stuck) return;
    for (Rank& r : ranks) {
      if (cudaSetDevice(r.dev) != cudaSuccess) continue;
      for (void* p : {r.buf, r.sink, static_cast<void*>(r.flag), static_cast<void*>(r.result)})
        if (p) cudaFree(p);
      for (cudaStream_t s : {r.s, r.s2})
        if (s) cudaStreamDestroy(s);
      for (cudaEvent_t e : {r.e0, r.e1})
        if (e) cudaEventDestroy(e);
    }
    if (host) cudaFreeHost(host);
    for (const auto& [dev, peer] : enabled)
      if (cudaSetDevice(dev) == cudaSuccess) cudaDeviceDisablePeerAccess(peer);
    cudaGetLastError();
  }

  bool fail(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return true;
    if (error.empty()) error = std::string(what) + " failed: " + cudaGetErrorString(e);
    cudaGetLastError();
    return false;
  }

  // The deadline of the next measurement; false (with the error) once the budget is spent.
  bool next(ProbeClock::time_point* deadline, const char* what) {
    const ProbeClock::time_point now = ProbeClock::now();
    if (!error.empty()) return false;
    if (now >= end) {
      error = std::string("the probe's time budget ran out before ") + what;
      return false;
    }
    *deadline = std::min(end, now + std::chrono::milliseconds(kMeasureMs));
    return true;
  }

  bool wait(Wait w, const std::string& why, const char* what) {
    if (w == Wait::kDone) return true;
    if (w == Wait::kTimeout) stuck = true;
    if (error.empty())
      error = w == Wait::kTimeout ? std::string(what) +
                                        " did not finish in time: the fabric "
                                        "hangs or is extremely slow"
                                  : why;
    return false;
  }
};

bool setup(const std::vector<int>& gpus, Session* S) {
  for (int dev : gpus) {
    Rank r;
    r.dev = dev;
    int sms = 1;
    const size_t sink_words = static_cast<size_t>(kProbeMaxTargets) * 256 * kProbeThreads;
    if (!S->fail(cudaSetDevice(dev), "cudaSetDevice") ||
        !S->fail(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev),
                 "cudaDeviceGetAttribute") ||
        !S->fail(cudaStreamCreateWithFlags(&r.s, cudaStreamNonBlocking), "cudaStreamCreate") ||
        !S->fail(cudaStreamCreateWithFlags(&r.s2, cudaStreamNonBlocking), "cudaStreamCreate") ||
        !S->fail(cudaEventCreate(&r.e0), "cudaEventCreate") ||
        !S->fail(cudaEventCreate(&r.e1), "cudaEventCreate") ||
        !S->fail(cudaMalloc(&r.buf, kBytes), "cudaMalloc") ||
        !S->fail(cudaMalloc(&r.sink, sink_words * 16), "cudaMalloc") ||
        !S->fail(cudaMalloc(reinterpret_cast<void**>(&r.flag), sizeof(unsigned)), "cudaMalloc") ||
        !S->fail(cudaMalloc(reinterpret_cast<void**>(&r.result), sizeof(unsigned long long)),
                 "cudaMalloc") ||
        !S->fail(cudaMemset(r.buf, 0, kBytes), "cudaMemset")) {
      S->ranks.push_back(r);
      return false;
    }
    r.blocks = std::max(1, std::min(sms, 256));  // one block an SM: enough to fill a link
    S->ranks.push_back(r);
  }
  for (const Rank& a : S->ranks)
    for (const Rank& b : S->ranks) {
      if (a.dev == b.dev) continue;
      if (std::find(S->enabled.begin(), S->enabled.end(), std::make_pair(a.dev, b.dev)) !=
          S->enabled.end())
        continue;
      if (!S->fail(cudaSetDevice(a.dev), "cudaSetDevice")) return false;
      const cudaError_t e = cudaDeviceEnablePeerAccess(b.dev, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();
        continue;
      }
      if (!S->fail(e, "cudaDeviceEnablePeerAccess")) return false;
      S->enabled.emplace_back(a.dev, b.dev);
    }
  if (!S->fail(cudaSetDevice(gpus[0]), "cudaSetDevice") ||
      !S->fail(cudaHostAlloc(&S->host, kBytes + 64, cudaHostAllocMapped | cudaHostAllocPortable),
               "cudaHostAlloc") ||
      !S->fail(cudaHostGetDevicePointer(&S->host_dev, S->host, 0), "cudaHostGetDevicePointer"))
    return false;
  return true;
}

using Issue = std::function<cudaError_t(Rank&)>;

// Runs `issue` on each rank in `who` at once, between that rank's events: an untimed round (the
// first touch of a peer mapping costs extra), then a timed one. ms[i]: rank who[i]'s time.
bool timed(Session* S, const std::vector<int>& who, const Issue& issue, const char* what,
           std::vector<float>* ms) {
  for (int round = 0; round < 2; ++round) {
    ProbeClock::time_point deadline;
    if (!S->next(&deadline, what)) return false;
    for (int i : who) {
      Rank& r = S->ranks[i];
      if (!S->fail(cudaSetDevice(r.dev), "cudaSetDevice") ||
          !S->fail(cudaEventRecord(r.e0, r.s), "cudaEventRecord") || !S->fail(issue(r), what) ||
          !S->fail(cudaEventRecord(r.e1, r.s), "cudaEventRecord"))
        return false;
    }
    ms->clear();
    for (int i : who) {
      std::string why;
      if (!S->wait(waitForEvent(S->ranks[i].e1, deadline, &why), why, what)) return false;
      float t = 0;
      if (!S->fail(cudaEventElapsedTime(&t, S->ranks[i].e0, S->ranks[i].e1),
                   "cudaEventElapsedTime"))
        return false;
      ms->push_back(t);
    }
  }
  return true;
}

// GB/s of `bytes` per rank, the mean over the ranks' times.
double meanGbps(size_t bytes, const std::vector<float>& ms) {
  double sum = 0;
  for (float t : ms) sum += t > 0 ? static_cast<double>(bytes) / (t * 1e6) : 0;
  return ms.empty() ? -1 : sum / static_cast<double>(ms.size());
}

ProbeTargets targets(std::vector<void*> ptrs, size_t bytes) {
  ProbeTargets t{};
  t.count = static_cast<int>(ptrs.size());
  for (int i = 0; i < t.count; ++i) t.ptr[i] = ptrs[i];
  t.bytes = bytes;
  return t;
}

// Store, load and copy bandwidth of every rank in `who` at once; rank i's traffic goes to
// dsts(i) (device pointers of `bytes` each), its copies from src(i).
void bandwidth(Session* S, const std::vector<int>& who,
               const std::function<std::vector<void*>(int)>& dsts,
               const std::function<std::vector<int>(int)>& dst_devs,
               const std::function<void*(int)>& src, size_t bytes, LinkSpeed* out) {
  std::vector<float> ms;
  std::vector<int> index_of(S->ranks.size(), 0);
  for (size_t k = 0; k < who.size(); ++k) index_of[who[k]] = static_cast<int>(k);
  auto rankIndex = [S](const Rank& r) { return static_cast<int>(&r - S->ranks.data()); };
  const size_t moved = bytes * dsts(who[0]).size();
  if (timed(
          S, who,
          [&](Rank& r) {
            const ProbeTargets t = targets(dsts(rankIndex(r)), bytes);
            return launchProbeStores(t, std::max(1, r.blocks / t.count), r.s);
          },
          "SM stores", &ms))
    out->store_gbps = meanGbps(moved, ms);
  if (timed(
          S, who,
          [&](Rank& r) {
            const ProbeTargets t = targets(dsts(rankIndex(r)), bytes);
            return launchProbeLoads(t, std::max(1, r.blocks / t.count), r.sink, r.s);
          },
          "SM loads", &ms))
    out->load_gbps = meanGbps(moved, ms);
  if (timed(
          S, who,
          [&](Rank& r) {
            const int i = rankIndex(r);
            const std::vector<void*> d = dsts(i);
            const std::vector<int> dd = dst_devs(i);
            for (size_t k = 0; k < d.size(); ++k) {
              const cudaError_t e =
                  dd[k] < 0 ? cudaMemcpyAsync(d[k], src(i), bytes, cudaMemcpyDefault, r.s)
                            : cudaMemcpyPeerAsync(d[k], dd[k], src(i), r.dev, bytes, r.s);
              if (e != cudaSuccess) return e;
            }
            return cudaSuccess;
          },
          "copy-engine copies", &ms))
    out->copy_gbps = meanGbps(moved, ms);
}

// One-way latency of a flag written by the starter's GPU (rank a, stream sa) into `theirs` and
// answered into `mine`, in us; -1 when it did not complete.
double pingUs(Session* S, int dev_a, cudaStream_t sa, unsigned* mine_a, unsigned long long* result,
              int dev_b, cudaStream_t sb, unsigned* mine_b) {
  ProbeClock::time_point deadline;
  if (!S->next(&deadline, "the flag ping-pong")) return -1;
  const long long left_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - ProbeClock::now()).count();
  const unsigned long long timeout_ns = left_ns > 0 ? static_cast<unsigned long long>(left_ns) : 0;
  std::string why;
  // Flags to 0 before either kernel runs: a reset racing the starter's first write would stall.
  // Each flag is reset by its own GPU.
  if (!S->fail(cudaSetDevice(dev_a), "cudaSetDevice") ||
      !S->fail(cudaMemsetAsync(mine_a, 0, sizeof(unsigned), sa), "cudaMemsetAsync") ||
      !S->fail(cudaSetDevice(dev_b), "cudaSetDevice") ||
      !S->fail(cudaMemsetAsync(mine_b, 0, sizeof(unsigned), sb), "cudaMemsetAsync") ||
      !S->wait(waitForStream(sa, deadline, &why), why, "the flag reset") ||
      !S->wait(waitForStream(sb, deadline, &why), why, "the flag reset") ||
      !S->fail(launchProbePing(mine_b, mine_a, kPingRounds, false, timeout_ns, nullptr, sb),
               "the echo kernel") ||
      !S->fail(cudaSetDevice(dev_a), "cudaSetDevice") ||
      !S->fail(launchProbePing(mine_a, mine_b, kPingRounds, true, timeout_ns, result, sa),
               "the ping kernel") ||
      !S->wait(waitForStream(sa, deadline + std::chrono::milliseconds(10), &why), why,
               "the flag ping-pong") ||
      !S->wait(waitForStream(sb, deadline + std::chrono::milliseconds(10), &why), why,
               "the flag ping-pong"))
    return -1;
  unsigned long long ns = 0;
  if (!S->fail(cudaMemcpy(&ns, result, sizeof(ns), cudaMemcpyDefault), "cudaMemcpy")) return -1;
  if (ns == 0) {
    S->error = "the flag ping-pong timed out on the GPU";
    return -1;
  }
  return static_cast<double>(ns) / kPingRounds / 2 / 1000;
}

void probePairs(Session* S, FabricProbe* out) {
  const int n = static_cast<int>(S->ranks.size());
  for (int a = 0; a < n && S->error.empty(); ++a)
    for (int b = a + 1; b < n && S->error.empty(); ++b) {
      ProbePair p;
      p.a = S->ranks[a].dev;
      p.b = S->ranks[b].dev;
      Rank& ra = S->ranks[a];
      Rank& rb = S->ranks[b];
      bandwidth(
          S, {a}, [&](int) { return std::vector<void*>{rb.buf}; },
          [&](int) { return std::vector<int>{rb.dev}; }, [&](int) { return ra.buf; }, kBytes,
          &p.speed);
      if (S->error.empty())
        p.speed.latency_us = pingUs(S, ra.dev, ra.s, ra.flag, ra.result, rb.dev, rb.s, rb.flag);
      out->pairs.push_back(p);
    }
}

// Every rank moving data to every other at once: rank i's share goes to region i of each peer's
// buffer, so no two ranks write the same bytes.
void probeAllPairs(Session* S, FabricProbe* out) {
  const int n = static_cast<int>(S->ranks.size());
  if (n < 2) return;
  const size_t share = kBytes / static_cast<size_t>(n) / 16 * 16;
  auto region = [&](int owner, int writer) {
    return static_cast<char*>(S->ranks[owner].buf) + static_cast<size_t>(writer) * share;
  };
  std::vector<int> all;
  for (int i = 0; i < n; ++i) all.push_back(i);
  bandwidth(
      S, all,
      [&](int i) {
        std::vector<void*> d;
        for (int j = 0; j < n; ++j)
          if (j != i) d.push_back(region(j, i));
        return d;
      },
      [&](int i) {
        std::vector<int> d;
        for (int j = 0; j < n; ++j)
          if (j != i) d.push_back(S->ranks[j].dev);
        return d;
      },
      [&](int i) { return static_cast<void*>(region(i, i)); }, share, &out->all_pairs);
}

void probeHost(Session* S, FabricProbe* out) {
  Rank& r = S->ranks[0];
  unsigned* flags = reinterpret_cast<unsigned*>(static_cast<char*>(S->host_dev) + kBytes);
  bandwidth(
      S, {0}, [&](int) { return std::vector<void*>{S->host_dev}; },
      [&](int) { return std::vector<int>{-1}; }, [&](int) { return r.buf; }, kBytes, &out->host);
  if (!S->error.empty()) return;
  out->host.latency_us = pingUs(S, r.dev, r.s, flags, r.result, r.dev, r.s2, flags + 1);
}

}  // namespace

bool runFabricProbe(const std::vector<int>& gpus, int budget_ms, FabricProbe* out,
                    std::string* why) {
  static_assert(kProbeMaxGpus <= kProbeMaxTargets, "a probe kernel must reach every other GPU");
  if (gpus.empty() || gpus.size() > static_cast<size_t>(kProbeMaxGpus)) {
    *why = strFormat("the fabric probe takes 1..%d GPUs, not %zu", kProbeMaxGpus, gpus.size());
    return false;
  }
  out->gpus = gpus;  // judgeFabric needs them: host memory only, one GPU twice, or a fabric
  int prev = 0;
  if (cudaGetDevice(&prev) != cudaSuccess) {
    *why = std::string("no CUDA device: ") + cudaGetErrorString(cudaGetLastError());
    return false;
  }
  const ProbeClock::time_point start = ProbeClock::now();
  bool started = false;
  {
    Session S;
    S.end = start + std::chrono::milliseconds(budget_ms > 0 ? budget_ms : 1);
    started = setup(gpus, &S);
    if (started) {
      // All pairs first: the verdict needs it most, and a cut budget should cost the tail.
      probeAllPairs(&S, out);
      probePairs(&S, out);
      probeHost(&S, out);
      out->error = S.error;
    } else {
      *why = S.error;
    }
  }
  cudaSetDevice(prev);
  cudaGetLastError();
  out->elapsed_ms = std::chrono::duration<double, std::milli>(ProbeClock::now() - start).count();
  TPCOMM_INFO(TOPO, "fabric probe of %zu GPUs: %.0f ms%s%s", gpus.size(), out->elapsed_ms,
              out->error.empty() ? "" : ", cut short: ", out->error.c_str());
  return started;
}

}  // namespace topo
}  // namespace tpcomm
