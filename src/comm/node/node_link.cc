#include "comm/node/node_link.h"

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "comm/lifecycle/registry.h"
#include "comm/node/node_link_handle.h"
#include "common/error.h"
#include "common/log.h"
#include "kernels/runtime/algo_launch.h"
#include "transport/nccl_loader.h"

namespace tpcomm {
namespace {

static_assert(sizeof(ncclUniqueId) <= sizeof(LinkInfo::nccl_id), "ncclUniqueId does not fit");

tpcommResult_t ncclCheck(const NcclApi* api, ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return tpcommSuccess;
  return fail(tpcommNcclError, "%s failed: %s", what, api->getErrorString(r));
}

const NcclApi* linkApi(const char* op, int rank) {
  std::string why;
  const NcclApi* api = ncclApi(&why);
  if (!api) {
    fail(tpcommNcclError, "%s: rank %d: NCCL links the machines but cannot be loaded: %s", op, rank,
         why.c_str());
    return nullptr;
  }
  if (!api->commInitRankConfig || !api->commGetAsyncError) {
    fail(tpcommNcclError,
         "%s: rank %d: the NCCL library lacks ncclCommInitRankConfig / ncclCommGetAsyncError "
         "(NCCL 2.14 or newer links machines with a bounded init)",
         op, rank);
    return nullptr;
  }
  return api;
}

// A non-blocking NCCL communicator may answer ncclInProgress: wait for it, bounded.
tpcommResult_t settle(const NcclApi* api, ncclComm_t nc, ncclResult_t r, int timeout_ms,
                      const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (r == ncclInProgress) {
    if (std::chrono::steady_clock::now() > deadline)
      return fail(tpcommTimeout, "%s did not complete within %d ms", what, timeout_ms);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    ncclResult_t state = ncclSuccess;
    const ncclResult_t q = api->commGetAsyncError(nc, &state);
    r = q != ncclSuccess ? q : state;
  }
  if (r == ncclSuccess) return tpcommSuccess;
  const char* last = api->getLastError(nc);
  return fail(tpcommNcclError, "%s failed: %s%s%s", what, api->getErrorString(r),
              last && *last ? ": " : "", last ? last : "");
}

NcclWatch& watchOf(tpcommComm* c, const NcclApi* api) {
  NodeSpan& sp = *c->span;
  if (!sp.watch)
    sp.watch = std::make_unique<NcclWatch>(c->device, c->settings.timeout_ms,
                                           [api, nc = sp.nccl] { api->commAbort(nc); });
  return *sp.watch;
}

// One NCCL leg on `s`: settled (a non-blocking communicator), watched unless captured.
template <typename Launch>
tpcommResult_t runLeg(tpcommComm* c, cudaStream_t s, bool capturing, Launch launch,
                      const std::string& what) {
  const NcclApi* api = ncclApi(nullptr);
  if (!api || !c->span || !c->span->nccl)
    return fail(tpcommInternalError, "an NCCL leg without a link");
  ncclComm_t nc = c->span->nccl;
  auto enqueue = [&] {
    return settle(api, nc, launch(api, nc), c->settings.timeout_ms, what.c_str());
  };
  c->span->link_calls++;
  if (capturing) return enqueue();
  NcclWatch& w = watchOf(c, api);
  cudaEvent_t start = nullptr;
  const tpcommResult_t r = w.begin(s, enqueue, &start);
  // The link's calls are checked before they reach NCCL: an NCCL error here is the link in error
  // (a machine gone) or stuck in ncclInProgress, and a kernel NCCL may have launched first would
  // hang the stream.
  if (r == tpcommNcclError || r == tpcommTimeout) w.breakAfterFailedLaunch();
  if (r != tpcommSuccess) return r;
  return w.finish(s, start, what);
}

std::string legWhat(const char* leg, size_t bytes, const tpcommComm* c) {
  return std::string("the NCCL ") + leg + " of " + std::to_string(bytes) +
         " bytes between machines on rank " + std::to_string(c->span->global_rank) + " (node " +
         std::to_string(c->span->layout.node) + ", local index " +
         std::to_string(c->span->layout.local) + ")";
}

LinkInfo linkInfoOf(const tpcommComm* c) {
  return makeLinkInfo(*c->span, c->knobs.node_small_bytes);
}

}  // namespace

tpcommResult_t nodeSplit(tpcommComm* c, const RankInfo* all, std::vector<RankInfo>* local) {
  NodeLayout layout;
  TPCOMM_CHECK(groupByHost(all, c->world, c->rank, &layout));
  if (layout.nodes == 1) {
    if (c->world > kMaxRanks)
      return fail(tpcommInvalidArgument,
                  "tpcommCommInitRankEnd: nranks=%d on one machine (host id %s): tpcomm supports "
                  "1..%d ranks per machine",
                  c->world, all[0].host_id, kMaxRanks);
    return tpcommSuccess;
  }
  if (c->settings.nccl_mode != tpcommNcclAuto)
    return fail(tpcommInvalidArgument,
                "tpcommCommInitRankEnd: the ranks span %d machines, which NCCL links, but "
                "ncclMode is %s: use tpcommNcclAuto (TPCOMM_NCCL=auto)",
                layout.nodes, c->settings.nccl_mode == tpcommNcclOff ? "off" : "tpcommNcclGiven");
  auto sp = std::make_unique<NodeSpan>();
  sp->global_rank = c->rank;
  sp->global_world = c->world;
  *local = localHandles(all, layout);
  sp->layout = std::move(layout);
  c->rank = sp->layout.local;
  c->world = sp->layout.local_ranks;
  c->span = std::move(sp);
  TPCOMM_INFO(INIT, "rank %d/%d: node %d of %d, local index %d of %d: link with NodeLinkBegin/End",
              c->span->global_rank, c->span->global_world, c->span->layout.node,
              c->span->layout.nodes, c->rank, c->world);
  return tpcommSuccess;
}

void nodeLinkDestroy(tpcommComm* c) {
  if (!c->span) return;
  bool aborted = false;
  if (c->span->watch) {
    c->span->watch->stop();
    aborted = c->span->watch->ended();
    c->span->watch.reset();
  }
  if (c->span->nccl && !aborted) {
    if (const NcclApi* api = ncclApi(nullptr)) api->commDestroy(c->span->nccl);
  }
  c->span->nccl = nullptr;
}

tpcommResult_t nodeLinkReady(const tpcommComm* c, const char* op) {
  if (!c->span->linked)
    return fail(tpcommInvalidUsage,
                "%s: rank %d's communicator spans %d machines and is not linked: call "
                "tpcommCommNodeLinkBegin/End first",
                op, c->span->global_rank, c->span->layout.nodes);
  return tpcommSuccess;
}

bool nodeLinkHung(const tpcommComm* c, std::string* report) {
  if (!c->span || !c->span->watch || !c->span->watch->hung()) return false;
  if (report) *report = c->span->watch->report();
  return true;
}

tpcommResult_t nodeLinkAllReduce(tpcommComm* c, const void* send, void* recv, size_t count,
                                 tpcommDataType_t dt, cudaStream_t s, bool capturing) {
  const ncclDataType_t nt = static_cast<ncclDataType_t>(dt);  // tpcomm's values are NCCL's
  return runLeg(
      c, s, capturing,
      [&](const NcclApi* api, ncclComm_t nc) {
        return api->allReduce(send, recv, count, nt, ncclSum, nc, s);
      },
      legWhat("all_reduce", count * dtypeSize(dt), c));
}

tpcommResult_t nodeLinkRsag(tpcommComm* c, tpcommColl_t coll, const void* send, void* recv,
                            size_t count, tpcommDataType_t dt, cudaStream_t s, bool capturing) {
  const ncclDataType_t nt = static_cast<ncclDataType_t>(dt);
  const bool rs = coll == tpcommCollReduceScatter;
  const size_t bytes = count * dtypeSize(dt) * static_cast<size_t>(c->span->layout.nodes);
  return runLeg(
      c, s, capturing,
      [&](const NcclApi* api, ncclComm_t nc) {
        return rs ? api->reduceScatter(send, recv, count, nt, ncclSum, nc, s)
                  : api->allGather(send, recv, count, nt, nc, s);
      },
      legWhat(rs ? "reduce_scatter" : "all_gather", bytes, c));
}

}  // namespace tpcomm

using namespace tpcomm;

extern "C" {

tpcommResult_t tpcommCommNodes(tpcommComm_t comm, int* nodes, int* localRanks) {
  clearLastError();
  TPCOMM_CHECK(checkComm(comm, "tpcommCommNodes"));
  if (!nodes || !localRanks)
    return fail(tpcommInvalidArgument, "tpcommCommNodes: nodes or localRanks is NULL");
  *nodes = comm->span ? comm->span->layout.nodes : 1;
  *localRanks = comm->world;
  return tpcommSuccess;
}

tpcommResult_t tpcommCommGetNodeLinkCalls(tpcommComm_t comm, uint64_t* calls) {
  clearLastError();
  TPCOMM_CHECK(checkComm(comm, "tpcommCommGetNodeLinkCalls"));
  if (!calls) return fail(tpcommInvalidArgument, "tpcommCommGetNodeLinkCalls: calls is NULL");
  *calls = comm->span ? comm->span->link_calls : 0;
  return tpcommSuccess;
}

tpcommResult_t tpcommCommNodeLinkBegin(tpcommComm_t comm, tpcommRankHandle* myHandle) {
  clearLastError();
  const char* op = "tpcommCommNodeLinkBegin";
  TPCOMM_CHECK(checkComm(comm, op));
  if (!myHandle) return fail(tpcommInvalidArgument, "%s: myHandle is NULL", op);
  if (!comm->span)
    return fail(tpcommInvalidUsage,
                "%s: rank %d's communicator is on one machine: there is nothing to link", op,
                comm->rank);
  NodeSpan& sp = *comm->span;
  if (sp.link_begun)
    return fail(tpcommInvalidUsage, "%s: rank %d: called twice (next: tpcommCommNodeLinkEnd)", op,
                sp.global_rank);
  const NcclApi* api = linkApi(op, sp.global_rank);
  if (!api) return tpcommNcclError;
  sp.offers_id = sp.layout.leaders[sp.layout.local] == sp.global_rank;
  if (sp.offers_id) {
    // Rank 0 made an id at Begin for a local fallback a spanning communicator has not: it links
    // local index 0 instead, so its listener thread is not left waiting.
    if (sp.global_rank == 0 && comm->self.nccl_wanted) {
      memcpy(sp.nccl_id, comm->self.nccl_id, sizeof(sp.nccl_id));
    } else {
      ncclUniqueId id;
      TPCOMM_CHECK(ncclCheck(api, api->getUniqueId(&id), "ncclGetUniqueId"));
      memcpy(sp.nccl_id, &id, sizeof(id));
    }
  }
  sp.link_begun = true;
  packLinkInfo(linkInfoOf(comm), myHandle);
  return tpcommSuccess;
}

tpcommResult_t tpcommCommNodeLinkEnd(tpcommComm_t comm, const tpcommRankHandle* allHandles) {
  clearLastError();
  const char* op = "tpcommCommNodeLinkEnd";
  TPCOMM_CHECK(checkComm(comm, op));
  if (!allHandles) return fail(tpcommInvalidArgument, "%s: allHandles is NULL", op);
  if (!comm->span)
    return fail(tpcommInvalidUsage,
                "%s: rank %d's communicator is on one machine: there is nothing to link", op,
                comm->rank);
  NodeSpan& sp = *comm->span;
  if (!sp.link_begun)
    return fail(tpcommInvalidUsage, "%s: rank %d: call tpcommCommNodeLinkBegin first", op,
                sp.global_rank);
  if (sp.linked) return fail(tpcommInvalidUsage, "%s: rank %d: already linked", op, sp.global_rank);
  TPCOMM_CHECK(checkLinkHandles(sp, linkInfoOf(comm), allHandles));
  const NcclApi* api = linkApi(op, sp.global_rank);
  if (!api) return tpcommNcclError;
  LinkInfo leader;
  memcpy(&leader, allHandles[sp.layout.leaders[sp.layout.local]].internal, sizeof(leader));
  ncclUniqueId id;
  memcpy(&id, leader.nccl_id, sizeof(id));
  TPCOMM_CUDA_CHECK(cudaSetDevice(comm->device));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so that a machine that never comes is a bounded wait, not a hang
  ncclComm_t nc = nullptr;
  const ncclResult_t r = api->commInitRankConfig(&nc, sp.layout.nodes, id, sp.layout.node, &config);
  char what[192];
  snprintf(what, sizeof(what),
           "%s: rank %d (node %d, local index %d): ncclCommInitRank over %d machines", op,
           sp.global_rank, sp.layout.node, sp.layout.local, sp.layout.nodes);
  const tpcommResult_t res = settle(api, nc, r, comm->settings.init_timeout_ms, what);
  if (res != tpcommSuccess) {
    if (nc) api->commAbort(nc);
    if (res == tpcommTimeout) {
      const std::string first = lastError();
      return fail(tpcommTimeout,
                  "%s (initTimeoutMs): a rank of local index %d on another machine did not "
                  "reach tpcommCommNodeLinkEnd, or the machines cannot reach each other (NCCL's "
                  "NCCL_SOCKET_IFNAME / network settings)",
                  first.c_str(), sp.layout.local);
    }
    return res;
  }
  sp.nccl = nc;
  sp.linked = true;
  TPCOMM_INFO(INIT, "rank %d: linked to %d machines (local index %d)", sp.global_rank,
              sp.layout.nodes, sp.layout.local);
  return tpcommSuccess;
}

}  // extern "C"
