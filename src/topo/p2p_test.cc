#include "topo/p2p_test.h"

#include <cuda_runtime_api.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/log.h"
#include "topo/probe/stream_wait.h"

namespace tpcomm {
namespace topo {
namespace {

using Clock = ProbeClock;

// 4 MiB: enough pages (1024 of 4 KiB) for address translation problems to show, and well under a
// millisecond on any working P2P link, so start-up stays fast.
constexpr size_t kBytes = 4u << 20;

bool ok(cudaError_t e, const char* what, std::string* why) {
  if (e == cudaSuccess) return true;
  *why = std::string(what) + " failed: " + cudaGetErrorString(e);
  cudaGetLastError();  // do not leave a sticky-free error for the caller's next check
  return false;
}

// Everything the test allocates, released on every path except after a stuck copy (freeing memory
// a hung copy engine still targets would wait for it, i.e. hang the caller).
struct Probe {
  int a = 0, b = 0;
  void* src_a = nullptr;
  void* back_a = nullptr;
  void* dst_b = nullptr;
  cudaStream_t sa = nullptr, sb = nullptr;
  bool enabled_ab = false, enabled_ba = false;
  bool stuck = false;

  ~Probe() {
    if (stuck) return;
    if (cudaSetDevice(a) == cudaSuccess) {
      if (src_a) cudaFree(src_a);
      if (back_a) cudaFree(back_a);
      if (sa) cudaStreamDestroy(sa);
      if (enabled_ab) cudaDeviceDisablePeerAccess(b);
    }
    if (cudaSetDevice(b) == cudaSuccess) {
      if (dst_b) cudaFree(dst_b);
      if (sb) cudaStreamDestroy(sb);
      if (enabled_ba) cudaDeviceDisablePeerAccess(a);
    }
    cudaGetLastError();
  }
};

// Enables peer access from the current device to `peer`; *enabled says whether this call did it
// (already enabled by someone else is fine and stays enabled).
bool enablePeer(int dev, int peer, bool* enabled, std::string* why) {
  if (!ok(cudaSetDevice(dev), "cudaSetDevice", why)) return false;
  const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();
    return true;
  }
  *enabled = e == cudaSuccess;
  return ok(e, "cudaDeviceEnablePeerAccess", why);
}

std::vector<uint32_t> pattern(int a, int b, int round) {
  std::vector<uint32_t> p(kBytes / sizeof(uint32_t));
  uint32_t x = 0x9e3779b9u * static_cast<uint32_t>((a * 131 + b) * 4 + round + 1);
  for (uint32_t& w : p) {  // xorshift32: every word differs from its neighbours and from zero
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    w = x;
  }
  return p;
}

// "" if equal, else where they first differ and how much differs.
std::string compare(const std::vector<uint32_t>& want, const std::vector<uint32_t>& got) {
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (want[i] != got[i] && wrong++ == 0) first = i;
  if (wrong == 0) return "";
  char buf[160];
  snprintf(buf, sizeof(buf),
           "%zu of %zu words differ (first at byte %zu: wrote 0x%08x, read 0x%08x)", wrong,
           want.size(), first * sizeof(uint32_t), want[first], got[first]);
  return buf;
}

bool allocate(Probe* p, std::string* why) {
  return ok(cudaSetDevice(p->a), "cudaSetDevice", why) &&
         ok(cudaStreamCreateWithFlags(&p->sa, cudaStreamNonBlocking), "cudaStreamCreate", why) &&
         ok(cudaMalloc(&p->src_a, kBytes), "cudaMalloc", why) &&
         ok(cudaMalloc(&p->back_a, kBytes), "cudaMalloc", why) &&
         ok(cudaSetDevice(p->b), "cudaSetDevice", why) &&
         ok(cudaStreamCreateWithFlags(&p->sb, cudaStreamNonBlocking), "cudaStreamCreate", why) &&
         ok(cudaMalloc(&p->dst_b, kBytes), "cudaMalloc", why);
}

// Local work only (no P2P): the pattern into src_a, zeros into both destinations so that neither
// stale memory nor the previous round can pass for a copy that did not happen.
P2pHealth prepare(Probe* p, const std::vector<uint32_t>& want, int timeout_ms, std::string* why) {
  if (!ok(cudaMemcpyAsync(p->src_a, want.data(), kBytes, cudaMemcpyHostToDevice, p->sa),
          "cudaMemcpyAsync (host to device)", why) ||
      !ok(cudaMemsetAsync(p->back_a, 0, kBytes, p->sa), "cudaMemsetAsync", why) ||
      !ok(cudaMemsetAsync(p->dst_b, 0, kBytes, p->sb), "cudaMemsetAsync", why))
    return P2pHealth::kUnknown;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (cudaStream_t s : {p->sa, p->sb}) {
    const Wait w = waitForStream(s, deadline, why);
    if (w == Wait::kTimeout) {
      p->stuck = true;
      *why = "copies within one GPU did not finish within " + std::to_string(timeout_ms) + " ms";
    }
    if (w != Wait::kDone) return P2pHealth::kUnknown;
  }
  return P2pHealth::kWorks;
}

// a -> b, then b -> a, each bounded by the deadline; *us is the time both took.
P2pHealth copyBothWays(Probe* p, int timeout_ms, double* us, std::string* why) {
  struct Step {
    void* dst;
    int dst_dev;
    const void* src;
    int src_dev;
    cudaStream_t s;
  };
  const Step steps[2] = {{p->dst_b, p->b, p->src_a, p->a, p->sa},
                         {p->back_a, p->a, p->dst_b, p->b, p->sb}};
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::milliseconds(timeout_ms);
  for (const Step& st : steps) {
    if (!ok(cudaMemcpyPeerAsync(st.dst, st.dst_dev, st.src, st.src_dev, kBytes, st.s),
            "cudaMemcpyPeerAsync", why))
      return P2pHealth::kBroken;
    const Wait w = waitForStream(st.s, deadline, why);
    if (w == Wait::kError) return P2pHealth::kBroken;
    if (w == Wait::kTimeout) {
      p->stuck = true;
      *why = "a peer copy GPU " + std::to_string(st.src_dev) + " -> GPU " +
             std::to_string(st.dst_dev) + " did not finish within " + std::to_string(timeout_ms) +
             " ms: P2P hangs on this machine (IOMMU or PCIe ACS enabled?)";
      return P2pHealth::kBroken;
    }
  }
  *us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  return P2pHealth::kWorks;
}

P2pHealth check(Probe* p, const std::vector<uint32_t>& want, std::string* why) {
  std::vector<uint32_t> got(want.size());
  const struct {
    const void* buf;
    int from, to;
  } results[2] = {{p->dst_b, p->a, p->b}, {p->back_a, p->b, p->a}};
  for (const auto& r : results) {
    if (!ok(cudaMemcpy(got.data(), r.buf, kBytes, cudaMemcpyDeviceToHost), "cudaMemcpy", why))
      return P2pHealth::kUnknown;
    const std::string diff = compare(want, got);
    if (!diff.empty()) {
      *why = "GPU " + std::to_string(r.from) + " -> GPU " + std::to_string(r.to) +
             " corrupts data: " + diff;
      return P2pHealth::kBroken;
    }
  }
  return P2pHealth::kWorks;
}

// Two rounds with different patterns: the first copy after peer access is enabled also pays for
// setting up the mapping (an order of magnitude on H200 NVLink: docs/BENCHMARKS.md), so the
// second round is the one timed; both are checked.
P2pHealth run(Probe* p, int timeout_ms, std::string* why) {
  if (!enablePeer(p->a, p->b, &p->enabled_ab, why) || !enablePeer(p->b, p->a, &p->enabled_ba, why))
    return P2pHealth::kBroken;  // supported, yet the driver refuses it: unusable all the same
  if (!allocate(p, why)) return P2pHealth::kUnknown;
  double us = 0;
  for (int round = 0; round < 2; ++round) {
    const std::vector<uint32_t> want = pattern(p->a, p->b, round);
    P2pHealth h = prepare(p, want, timeout_ms, why);
    if (h == P2pHealth::kWorks) h = copyBothWays(p, timeout_ms, &us, why);
    if (h == P2pHealth::kWorks) h = check(p, want, why);
    if (h != P2pHealth::kWorks) return h;
  }
  char buf[128];
  snprintf(buf, sizeof(buf),
           "%zu MiB each way, twice, data intact; %.0f us for both ways (%.0f GB/s)", kBytes >> 20,
           us, 2.0 * kBytes / (us * 1e3));
  *why = buf;
  return P2pHealth::kWorks;
}

}  // namespace

P2pHealth testP2p(int dev_a, int dev_b, int timeout_ms, std::string* why) {
  why->clear();
  int prev = 0;
  if (!ok(cudaGetDevice(&prev), "cudaGetDevice", why)) return P2pHealth::kUnknown;
  if (dev_a == dev_b) {
    *why = "same GPU";
    return P2pHealth::kWorks;
  }
  int ab = 0, ba = 0;
  if (!ok(cudaDeviceCanAccessPeer(&ab, dev_a, dev_b), "cudaDeviceCanAccessPeer", why) ||
      !ok(cudaDeviceCanAccessPeer(&ba, dev_b, dev_a), "cudaDeviceCanAccessPeer", why))
    return P2pHealth::kUnknown;
  if (!ab || !ba) {
    *why = "the driver does not support P2P between GPU " + std::to_string(dev_a) + " and GPU " +
           std::to_string(dev_b);
    return P2pHealth::kNotTested;
  }
  P2pHealth h;
  {
    Probe probe;
    probe.a = dev_a;
    probe.b = dev_b;
    h = run(&probe, timeout_ms > 0 ? timeout_ms : 1, why);
  }
  cudaSetDevice(prev);
  TPCOMM_INFO(P2P, "P2P test GPU %d <-> GPU %d: %s (%s)", dev_a, dev_b, p2pHealthName(h),
              why->c_str());
  return h;
}

}  // namespace topo
}  // namespace tpcomm
