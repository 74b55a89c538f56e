// Communicator lifecycle: Begin (allocate, describe this rank) -> exchange of rank handles (our
// socket bootstrap, the caller's process group, or in-process) -> End (map peers, agree on
// settings, self-check kernel images, create the NCCL fallback) -> Destroy.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "comm/call/fused_staging.h"
#include "comm/call/nccl_fallback.h"
#include "comm/comm.h"
#include "comm/lifecycle/fabric.h"
#include "comm/lifecycle/host_transport.h"
#include "comm/lifecycle/machine_view.h"
#include "comm/lifecycle/registry.h"
#include "comm/node/node_link.h"
#include "comm/rendezvous/bootstrap.h"
#include "comm/rendezvous/unique_id.h"
#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "kernels/runtime/algo_launch.h"
#include "kernels/runtime/image_check.h"
#include "kernels/runtime/occupancy.h"
#include "topo/pcie_ordering.h"

namespace tpcomm {
namespace {

tpcommResult_t currentDevice(int* device) {
  int n = 0;
  TPCOMM_CUDA_CHECK(cudaGetDeviceCount(&n));
  if (n == 0) return fail(tpcommNoDevice, "no CUDA device is visible");
  TPCOMM_CUDA_CHECK(cudaGetDevice(device));
  return tpcommSuccess;
}

// max_ranks: kMaxRanks on one machine; TPCOMM_MAX_GLOBAL_RANKS where the ranks may span
// machines (tpcommCommInitRankBegin), 1..kMaxRanks on each (checked at End).
tpcommResult_t checkWorld(int nranks, int rank, const char* op, int max_ranks = kMaxRanks) {
  if (nranks < 1 || nranks > max_ranks)
    return fail(tpcommInvalidArgument, "%s: nranks=%d, tpcomm supports 1..%d ranks%s", op, nranks,
                max_ranks, max_ranks > kMaxRanks ? " (1..8 on each machine)" : "");
  if (rank < 0 || rank >= nranks)
    return fail(tpcommInvalidArgument, "%s: rank=%d is outside 0..%d", op, rank, nranks - 1);
  return tpcommSuccess;
}

// Allocates this rank's resources and describes them in c->self. may_span: the ranks may be on
// several machines (known at End only), so every rank names a host segment: its machine's first
// rank's name is the one used.
tpcommResult_t beginRank(tpcommComm* c, int nranks, int rank, int device, const Settings& s,
                         bool may_span = false) {
  logEnvOnce();
  c->rank = rank;
  c->world = nranks;
  c->device = device;
  c->settings = s;
  TPCOMM_CUDA_CHECK(cudaSetDevice(device));
  TPCOMM_CHECK(checkKernelImages(device, &c->ptx_jit));
  TPCOMM_CHECK(
      stagingCreate(device, s.slot_bytes, needsCeStaging(s.algo, s.knobs.variant), &c->staging));
  TPCOMM_CHECK(fillIdentity(rank, nranks, device, s, &c->self));
  c->cc_major = c->self.cc_major;  // read once, by fillIdentity
  c->cc_minor = c->self.cc_minor;
  std::string key;
  buildMachineView(device, &c->self.view, &c->tuning, &key);
  TPCOMM_CHECK(queryOccupancy(device, std::min(nranks, kMaxRanks), &c->self.view.occupancy));
  TPCOMM_CHECK(stagingExport(c->staging, &c->self.staging));
  if ((rank == 0 || may_span) && nranks > 1) {
    // Whether the host transport is used is known only once every rank's GPU is known (End):
    // rank 0 names a segment here and creates it in End only if it is
    // (comm/lifecycle/host_transport.h). Segments that a killed rank 0 of this user left behind go
    // first (transport/host_shm.h).
    hostSegmentReclaimStale();
    std::string name;
    TPCOMM_CHECK(hostSegmentName(&name));
    snprintf(c->self.host_shm, sizeof(c->self.host_shm), "%s", name.c_str());
  }
  return tpcommSuccess;
}

// Maps the peers (IPC, or the direct pointers of an in-process communicator) and fills c->dev.
tpcommResult_t finishRank(tpcommComm* c, const RankInfo* all, char* const* direct) {
  TPCOMM_CUDA_CHECK(cudaSetDevice(c->device));
  TPCOMM_CHECK(streamOrderCreate(&c->order));
  TPCOMM_CHECK(detectFabric(c, all));
  DeviceComm& d = c->dev;
  d = DeviceComm{};
  d.rank = c->rank;
  d.world = c->world;
  d.timeout_ns = static_cast<unsigned long long>(c->settings.timeout_ms) * 1000000ull;
  d.slot_bytes = c->settings.slot_bytes;
  d.state = c->staging.state;
  d.host_error = c->staging.host_error_dev;
  for (int p = 0; p < c->world; ++p) {
    if (p == c->rank) {
      d.bufs[p] = c->staging.buf;
    } else if (c->fabric == Fabric::kHost) {
      d.bufs[p] = nullptr;  // peers are reached through host memory only
    } else if (direct) {
      int peer_dev = -1;
      TPCOMM_CUDA_CHECK(cudaDeviceGetByPCIBusId(&peer_dev, all[p].pci_bus_id));
      TPCOMM_CHECK(enablePeerAccess(c->device, peer_dev));
      d.bufs[p] = direct[p];
    } else {
      if (all[p].pid == all[c->rank].pid)
        return fail(tpcommInvalidUsage,
                    "ranks %d and %d are in one process (pid %d): use tpcommCommInitAll for "
                    "several ranks in one process",
                    c->rank, p, all[p].pid);
      TPCOMM_CHECK(stagingOpenPeer(all[p].staging, p, &d.bufs[p]));
      c->ipc_mapped.push_back(d.bufs[p]);
    }
  }
  // Every rank's call fingerprints follow its slots (stagingCreate; slot_bytes is agreed).
  // The pull outboxes follow the prints (the same allocation and mapping).
  d.pull_slot_bytes = pullSlotBytes(d.slot_bytes);
  for (int p = 0; p < c->world; ++p) {
    d.prints[p] = d.bufs[p] ? d.bufs[p] + kNumSlots * d.slot_bytes : nullptr;
    d.pulls[p] = d.prints[p] ? d.prints[p] + kPrintBytes : nullptr;
  }
  // The CE areas follow the pull outboxes where every rank made one (the forced algorithm is
  // agreed).
  for (int p = 0; p < c->world && c->staging.ce; ++p)
    d.ce[p] = d.pulls[p] ? d.pulls[p] + pullOutboxBytes(d.slot_bytes) : nullptr;
  TPCOMM_CUDA_CHECK(cudaSetDevice(c->device));
  TPCOMM_CHECK(setupHostTransport(c, all));
  fillIslands(c, &d);
  c->slots = slotCapacity(d);  // the one place step sizes are computed from the slot layout
  c->knobs = c->settings.knobs;
  c->knobs.max_blocks = c->settings.max_blocks;
  c->knobs.pdl = c->knobs.pdl && c->cc_major >= 9;
  // Only host-memory readers fence: auto resolves, per rank from its machine's driver (ranks
  // sharing host memory share it), where the communicator uses host memory; elsewhere nothing
  // reads the knob and the driver's parameters are not read.
  if (c->host_seg.dev) {
    const topo::PcieOrdering ordering = topo::readRelaxedOrdering();
    c->knobs.host_fence = hostFenceOn(c->knobs.host_fence, ordering) ? kHostFenceOn : kHostFenceOff;
    TPCOMM_INFO(INIT, "rank %d: host-memory readers %s: %s", c->rank,
                c->knobs.host_fence ? "fence after their clears" : "do not fence",
                ordering.why.c_str());
  } else {
    c->knobs.host_fence = kHostFenceOff;
  }
  d.host_fence = c->knobs.host_fence;
  TPCOMM_INFO(INIT,
              "rank %d/%d on GPU %d (%s, cc %d.%d): fabric %s, one-shot step %zu bytes, "
              "two-shot chunk %zu bytes",
              c->rank, c->world, c->device, all[c->rank].pci_bus_id, c->cc_major, c->cc_minor,
              fabricName(c->fabric), c->slots.oneshot_step_bytes,
              c->slots.twoshot_chunk_vecs * kVecBytes);
  return tpcommSuccess;
}

void destroyComm(tpcommComm* c) {
  if (!c) return;
  unregisterComm(c);      // refused from here on, while it is torn down
  c->rendezvous.reset();  // frees the unique id's name: a new communicator may use it again
  if (c->device >= 0) {
    cudaSetDevice(c->device);
    cudaDeviceSynchronize();  // no kernel of ours may still write into a peer or read our slots
  }
  for (char* p : c->ipc_mapped) stagingClosePeer(p);
  releaseFusedScratch(c);
  hostSegmentRelease(&c->host_seg);  // rank 0's: also removes the name
  nodeLinkDestroy(c);
  ncclFallbackDestroy(c);
  stagingDestroy(&c->staging);
  streamOrderDestroy(&c->order);
  cudaGetLastError();
  retireComm(c);  // its address is never given to another communicator (comm/lifecycle/registry.h)
}

// Creates the comm object and registers it; on failure of `body`, destroys it.
template <typename Body>
tpcommResult_t withNewComm(tpcommComm** out, Body body) {
  tpcommComm* c = createComm();
  const tpcommResult_t r = body(c);
  if (r != tpcommSuccess) {
    destroyComm(c);
    *out = nullptr;
    return r;
  }
  *out = c;
  return tpcommSuccess;
}

}  // namespace
}  // namespace tpcomm

using namespace tpcomm;

extern "C" {

tpcommResult_t tpcommGetUniqueId(tpcommUniqueId* uniqueId) {
  clearLastError();
  if (!uniqueId) return fail(tpcommInvalidArgument, "tpcommGetUniqueId: uniqueId is NULL");
  return makeUniqueId(uniqueId);
}

tpcommResult_t tpcommCommInitRankBegin(tpcommComm_t* comm, int nranks, int rank,
                                       const tpcommConfig_t* config, tpcommRankHandle* myHandle) {
  clearLastError();
  if (!comm || !myHandle)
    return fail(tpcommInvalidArgument, "tpcommCommInitRankBegin: comm or myHandle is NULL");
  *comm = nullptr;
  TPCOMM_CHECK(checkWorld(nranks, rank, "tpcommCommInitRankBegin", TPCOMM_MAX_GLOBAL_RANKS));
  Settings s;
  TPCOMM_CHECK(resolveSettings(config, &s));
  int device = -1;
  TPCOMM_CHECK(currentDevice(&device));
  return withNewComm(comm, [&](tpcommComm* c) {
    TPCOMM_CHECK(beginRank(c, nranks, rank, device, s, /*may_span=*/true));
    if (rank == 0) TPCOMM_CHECK(ncclFallbackPrepareId(s, &c->self));
    packHandle(c->self, myHandle);
    return tpcommSuccess;
  });
}

tpcommResult_t tpcommCommInitRankEnd(tpcommComm_t comm, const tpcommRankHandle* allHandles) {
  clearLastError();
  TPCOMM_CHECK(checkComm(comm, "tpcommCommInitRankEnd", /*need_ready=*/false));
  if (comm->state != CommState::kPending)
    return fail(tpcommInvalidUsage, "tpcommCommInitRankEnd: comm is already initialised");
  if (!allHandles) return fail(tpcommInvalidArgument, "tpcommCommInitRankEnd: allHandles is NULL");
  std::vector<RankInfo> all(static_cast<size_t>(comm->world));
  tpcommResult_t r = unpackHandles(allHandles, comm->world, all.data());
  if (r == tpcommSuccess &&
      memcmp(&all[static_cast<size_t>(comm->rank)], &comm->self, sizeof(RankInfo)) != 0)
    r = fail(tpcommInvalidArgument,
             "tpcommCommInitRankEnd: allHandles[%d] is not the handle this rank produced",
             comm->rank);
  // Over several machines, the local group is initialised as a communicator of one machine.
  std::vector<RankInfo> local;
  if (r == tpcommSuccess) r = nodeSplit(comm, all.data(), &local);
  const RankInfo* group = comm->span ? local.data() : all.data();
  if (r == tpcommSuccess) r = finishRank(comm, group, nullptr);
  if (r == tpcommSuccess) r = ncclFallbackInitRank(comm, group);
  if (r != tpcommSuccess) {
    destroyComm(comm);  // the handle is dead either way; say so in the docs
    return r;
  }
  comm->state = CommState::kReady;
  return tpcommSuccess;
}

tpcommResult_t tpcommCommInitRank(tpcommComm_t* comm, int nranks, tpcommUniqueId uniqueId, int rank,
                                  const tpcommConfig_t* config) {
  clearLastError();
  if (!comm) return fail(tpcommInvalidArgument, "tpcommCommInitRank: comm is NULL");
  TPCOMM_CHECK(checkWorld(nranks, rank, "tpcommCommInitRank"));
  tpcommRankHandle mine;
  TPCOMM_CHECK(tpcommCommInitRankBegin(comm, nranks, rank, config, &mine));
  std::vector<tpcommRankHandle> all(static_cast<size_t>(nranks));
  tpcommResult_t r = bootstrapAllGather(uniqueId, rank, nranks, &mine, sizeof(mine), all.data(),
                                        (*comm)->settings.init_timeout_ms, &(*comm)->rendezvous);
  if (r != tpcommSuccess) {
    destroyComm(*comm);
    *comm = nullptr;
    return r;
  }
  r = tpcommCommInitRankEnd(*comm, all.data());
  if (r == tpcommSuccess && (*comm)->span) {
    // The socket rendezvous is local; only TPCOMM_HOST_ID can make its ranks "span machines".
    const int nodes = (*comm)->span->layout.nodes;
    destroyComm(*comm);
    r = fail(tpcommInvalidUsage,
             "tpcommCommInitRank: the ranks give %d host ids (TPCOMM_HOST_ID?): this rendezvous "
             "is one machine's; a communicator across machines is made with "
             "tpcommCommInitRankBegin/End and tpcommCommNodeLinkBegin/End",
             nodes);
  }
  if (r != tpcommSuccess) *comm = nullptr;
  return r;
}

tpcommResult_t tpcommCommInitAll(tpcommComm_t* comms, int ndev, const int* devlist,
                                 const tpcommConfig_t* config) {
  clearLastError();
  if (!comms) return fail(tpcommInvalidArgument, "tpcommCommInitAll: comms is NULL");
  TPCOMM_CHECK(checkWorld(ndev, 0, "tpcommCommInitAll"));
  Settings s;
  TPCOMM_CHECK(resolveSettings(config, &s));
  int ndevices = 0;
  TPCOMM_CUDA_CHECK(cudaGetDeviceCount(&ndevices));
  std::vector<int> devs(static_cast<size_t>(ndev));
  for (int i = 0; i < ndev; ++i) {
    devs[i] = devlist ? devlist[i] : i;
    if (devs[i] < 0 || devs[i] >= ndevices)
      return fail(tpcommInvalidArgument,
                  "tpcommCommInitAll: devlist[%d]=%d, but %d device(s) are "
                  "visible",
                  i, devs[i], ndevices);
  }
  int saved = 0;
  cudaGetDevice(&saved);
  for (int i = 0; i < ndev; ++i) comms[i] = nullptr;
  auto cleanup = [&](tpcommResult_t r) {
    for (int i = 0; i < ndev; ++i) {
      destroyComm(comms[i]);
      comms[i] = nullptr;
    }
    cudaSetDevice(saved);
    return r;
  };
  std::vector<RankInfo> all(static_cast<size_t>(ndev));
  std::vector<char*> bufs(static_cast<size_t>(ndev));
  for (int i = 0; i < ndev; ++i) {
    const tpcommResult_t r =
        withNewComm(&comms[i], [&](tpcommComm* c) { return beginRank(c, ndev, i, devs[i], s); });
    if (r != tpcommSuccess) return cleanup(r);
    all[i] = comms[i]->self;
    bufs[i] = comms[i]->staging.buf;
  }
  for (int i = 0; i < ndev; ++i) {
    const tpcommResult_t r = finishRank(comms[i], all.data(), bufs.data());
    if (r != tpcommSuccess) return cleanup(r);
  }
  const tpcommResult_t r = ncclFallbackInitAll(comms, ndev, devs.data());
  if (r != tpcommSuccess) return cleanup(r);
  for (int i = 0; i < ndev; ++i) comms[i]->state = CommState::kReady;
  cudaSetDevice(saved);
  return tpcommSuccess;
}

tpcommResult_t tpcommCommDestroy(tpcommComm_t comm) {
  clearLastError();
  TPCOMM_CHECK(checkComm(comm, "tpcommCommDestroy", /*need_ready=*/false));
  destroyComm(comm);
  return tpcommSuccess;
}

}  // extern "C"
