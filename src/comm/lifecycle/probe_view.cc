#include "comm/lifecycle/probe_view.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "common/env.h"
#include "common/log.h"
#include "common/unique_fd.h"
#include "kernels/runtime/fabric_probe_run.h"
#include "topo/cache_dir.h"
#include "topo/classify.h"
#include "topo/p2p_cache.h"
#include "topo/probe/fabric_probe_cache.h"

namespace tpcomm {
namespace {

constexpr int kProbeBudgetMs = 3000;
// How long a process waits for another one's probe (its budget, the P2P tests before it, and
// the contexts it creates) before it settles for the cache alone.
constexpr int kLockWaitMs = kProbeBudgetMs + 7000;

// Takes the machine-wide lock that keeps concurrent processes from probing at once (their
// traffic would add up and look like a collapse) into *lock; false without a cache folder, or
// when another process kept the lock past kLockWaitMs.
bool lockProbe(const std::string& cache_path, UniqueFd* lock) {
  if (cache_path.empty()) return false;
  const std::string folder = cache_path.substr(0, cache_path.rfind('/'));
  if (topo::makeDirs(folder) != tpcommSuccess) return false;
  lock->reset(
      open((cache_path + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (lock->get() < 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLockWaitMs);
  while (flock(lock->get(), LOCK_EX | LOCK_NB) != 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

FabricVerdict decide(const topo::Topology& machine) {
  const int mode = env().fabric_probe;  // 0 auto, 1 cached, 2 off
  std::vector<int> gpus;
  for (int g = 0; g < machine.size() && g < topo::kProbeMaxGpus; ++g) gpus.push_back(g);
  if (mode == 2) {
    TPCOMM_INFO(TOPO, "fabric probe off (TPCOMM_FABRIC_PROBE=off): push defaults");
    return FabricVerdict::kUnknown;
  }
  if (gpus.size() < 2) return FabricVerdict::kUnknown;
  const Fabric fabric = topo::fabricFor(machine, gpus);
  if (fabric != Fabric::kPcie) return policyVerdict(fabric, nullptr);
  topo::FabricProbeOptions o;
  o.budget_ms = kProbeBudgetMs;
  o.prober = topo::runFabricProbe;
  o.may_run = mode == 0;
  topo::Topology t = machine;
  UniqueFd lock;
  if (o.may_run) {
    // Without the lock (another process probes too long) the cache alone: never two at once.
    o.may_run = lockProbe(topo::fabricProbeCachePath(t), &lock);
  }
  if (o.may_run) {
    // No kernel touches peer memory before the bounded copy test has seen P2P work (cached).
    topo::checkP2pHealth(&t, gpus);
    if (topo::fabricFor(t, gpus) != Fabric::kPcie) return policyVerdict(Fabric::kHost, nullptr);
  }
  topo::FabricProbe p;
  std::string why;
  const topo::ProbeSource source = topo::obtainFabricProbe(t, gpus, o, &p, &why);
  if (source == topo::ProbeSource::kNone) {
    TPCOMM_INFO(TOPO, "no fabric probe verdict (%s): push defaults", why.c_str());
    return FabricVerdict::kUnknown;
  }
  const topo::FabricFinding f = topo::judgeFabric(p, true);
  TPCOMM_INFO(TOPO, "fabric probe (%s): %s: %s; %s", topo::probeSourceName(source),
              fabricVerdictName(f.verdict), f.what.c_str(), f.action.c_str());
  return policyVerdict(Fabric::kPcie, &f);
}

}  // namespace

FabricVerdict policyVerdict(Fabric fabric, const topo::FabricFinding* finding) {
  switch (fabric) {
    case Fabric::kNvlink:
      return FabricVerdict::kUnknown;
    case Fabric::kHost:
      return FabricVerdict::kNoP2p;
    case Fabric::kPcie:
      return finding ? finding->verdict : FabricVerdict::kUnknown;
  }
  return FabricVerdict::kUnknown;
}

FabricVerdict machineFabricVerdict(const topo::Topology& machine) {
  static std::once_flag once;
  static FabricVerdict verdict = FabricVerdict::kUnknown;
  std::call_once(once, [&machine] { verdict = decide(machine); });
  return verdict;
}

}  // namespace tpcomm
