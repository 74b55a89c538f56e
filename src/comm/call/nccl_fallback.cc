#include "comm/call/nccl_fallback.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "kernels/runtime/algo_launch.h"
#include "transport/nccl_loader.h"

namespace tpcomm {
namespace {

tpcommResult_t ncclCheck(const NcclApi* api, ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return tpcommSuccess;
  return fail(tpcommNcclError, "%s failed: %s", what, api->getErrorString(r));
}

// Calls launched inside this thread's open NCCL group, whose end events wait for its end.
struct GroupedCall {
  NcclWatch* watch;
  cudaStream_t stream;
  cudaEvent_t start;
  std::string what;
};
thread_local int t_group_depth = 0;
thread_local std::vector<GroupedCall> t_grouped;

NcclWatch& watchOf(tpcommComm* c, const NcclApi* api) {
  if (!c->nccl_watch) {
    // Only a communicator tpcomm created may be aborted by tpcomm.
    std::function<void()> end_call;
    if (c->nccl_owned) end_call = [api, nc = c->nccl] { api->commAbort(nc); };
    c->nccl_watch =
        std::make_unique<NcclWatch>(c->device, c->settings.timeout_ms, std::move(end_call));
  }
  return *c->nccl_watch;
}

}  // namespace

tpcommResult_t ncclFallbackPrepareId(const Settings& s, RankInfo* self) {
  self->nccl_wanted = 0;
  if (s.nccl_mode != tpcommNcclAuto) return tpcommSuccess;
  std::string why;
  const NcclApi* api = ncclApi(&why);
  if (!api) return tpcommSuccess;  // logged by the loader; the policy sees no NCCL
  ncclUniqueId id;
  TPCOMM_CHECK(ncclCheck(api, api->getUniqueId(&id), "ncclGetUniqueId"));
  static_assert(sizeof(id) <= sizeof(self->nccl_id), "ncclUniqueId does not fit");
  memcpy(self->nccl_id, &id, sizeof(id));
  self->nccl_wanted = 1;
  return tpcommSuccess;
}

tpcommResult_t ncclFallbackInitRank(tpcommComm* c, const RankInfo* all) {
  if (c->settings.nccl_mode == tpcommNcclGiven) {
    c->nccl = static_cast<ncclComm*>(c->settings.nccl_comm);
    c->nccl_owned = false;
    TPCOMM_INFO(INIT, "rank %d: NCCL fallback through the caller's ncclComm_t", c->rank);
    return tpcommSuccess;
  }
  if (!all[0].nccl_wanted || c->world < 2) return tpcommSuccess;
  if (c->ranks_share_gpu) {
    TPCOMM_INFO(INIT, "rank %d: no NCCL fallback: ranks share a GPU", c->rank);
    return tpcommSuccess;
  }
  std::string why;
  const NcclApi* api = ncclApi(&why);
  if (!api)
    return fail(tpcommNcclError, "rank 0 set up the NCCL fallback but rank %d cannot load NCCL: %s",
                c->rank, why.c_str());
  ncclUniqueId id;
  memcpy(&id, all[0].nccl_id, sizeof(id));
  TPCOMM_CUDA_CHECK(cudaSetDevice(c->device));
  ncclComm_t nc = nullptr;
  TPCOMM_CHECK(ncclCheck(api, api->commInitRank(&nc, c->world, id, c->rank), "ncclCommInitRank"));
  c->nccl = nc;
  c->nccl_owned = true;
  TPCOMM_INFO(INIT, "rank %d: NCCL fallback ready", c->rank);
  return tpcommSuccess;
}

tpcommResult_t ncclFallbackInitAll(tpcommComm** comms, int n, const int* devs) {
  const Settings& s = comms[0]->settings;
  if (s.nccl_mode == tpcommNcclGiven)
    return fail(tpcommInvalidArgument,
                "tpcommCommInitAll: config.ncclMode=tpcommNcclGiven takes one ncclComm_t; give it "
                "per rank with tpcommCommInitRank instead");
  if (s.nccl_mode != tpcommNcclAuto || n < 2 || comms[0]->ranks_share_gpu) return tpcommSuccess;
  std::string why;
  const NcclApi* api = ncclApi(&why);
  if (!api) return tpcommSuccess;
  std::vector<ncclComm_t> nc(static_cast<size_t>(n), nullptr);
  TPCOMM_CHECK(ncclCheck(api, api->commInitAll(nc.data(), n, devs), "ncclCommInitAll"));
  for (int i = 0; i < n; ++i) {
    comms[i]->nccl = nc[static_cast<size_t>(i)];
    comms[i]->nccl_owned = true;
  }
  TPCOMM_INFO(INIT, "NCCL fallback ready for %d in-process ranks", n);
  return tpcommSuccess;
}

void ncclFallbackDestroy(tpcommComm* c) {
  bool aborted = false;
  if (c->nccl_watch) {
    c->nccl_watch->stop();  // no abort can start after this
    aborted = c->nccl_watch->ended();
    c->nccl_watch.reset();
  }
  if (c->nccl && c->nccl_owned && !aborted) {
    if (const NcclApi* api = ncclApi(nullptr)) api->commDestroy(c->nccl);
  }
  c->nccl = nullptr;
}

namespace {

// Launches one NCCL call on `stream`, watched by the communicator's watchdog unless captured
// (a replay of a captured call is invisible to the host: graphs are not watched, README).
template <typename Launch>
tpcommResult_t runWatched(tpcommComm* c, const NcclApi* api, cudaStream_t stream, bool capturing,
                          Launch launch, std::string what) {
  if (capturing) return launch();
  NcclWatch& w = watchOf(c, api);
  cudaEvent_t start = nullptr;
  TPCOMM_CHECK(w.begin(stream, launch, &start));
  if (t_group_depth > 0) {
    t_grouped.push_back(GroupedCall{&w, stream, start, std::move(what)});
    return tpcommSuccess;
  }
  return w.finish(stream, start, std::move(what));
}

std::string servedWhat(const char* op, size_t bytes, int rank) {
  return std::string(op) + " of " + std::to_string(bytes) + " bytes served by NCCL on rank " +
         std::to_string(rank);
}

}  // namespace

tpcommResult_t ncclFallbackAllReduce(tpcommComm* c, const void* send, void* recv, size_t count,
                                     tpcommDataType_t dtype, cudaStream_t stream, bool capturing) {
  const NcclApi* api = ncclApi(nullptr);
  if (!api || !c->nccl) return fail(tpcommInternalError, "NCCL fallback used without NCCL");
  // tpcommDataType_t values are NCCL's (see tpcomm.h).
  auto launch = [&] {
    return ncclCheck(api,
                     api->allReduce(send, recv, count, static_cast<ncclDataType_t>(dtype), ncclSum,
                                    c->nccl, stream),
                     "ncclAllReduce");
  };
  return runWatched(c, api, stream, capturing, launch,
                    servedWhat("tpcommAllReduce", count * dtypeSize(dtype), c->rank));
}

tpcommResult_t ncclFallbackRsag(tpcommComm* c, tpcommColl_t coll, const void* send, void* recv,
                                size_t count, tpcommDataType_t dtype, cudaStream_t stream,
                                bool capturing) {
  const NcclApi* api = ncclApi(nullptr);
  if (!api || !c->nccl) return fail(tpcommInternalError, "NCCL fallback used without NCCL");
  const ncclDataType_t nt = static_cast<ncclDataType_t>(dtype);
  const bool rs = coll == tpcommCollReduceScatter;
  auto launch = [&] {
    return rs ? ncclCheck(api, api->reduceScatter(send, recv, count, nt, ncclSum, c->nccl, stream),
                          "ncclReduceScatter")
              : ncclCheck(api, api->allGather(send, recv, count, nt, c->nccl, stream),
                          "ncclAllGather");
  };
  return runWatched(c, api, stream, capturing, launch,
                    servedWhat(rs ? "tpcommReduceScatter" : "tpcommAllGather",
                               count * dtypeSize(dtype) * static_cast<size_t>(c->world), c->rank));
}

bool ncclGroupOpen() {
  return t_group_depth > 0;
}

tpcommResult_t ncclGroup(bool start) {
  const NcclApi* api = ncclApi(nullptr);
  if (!api) return tpcommSuccess;
  if (start) {
    TPCOMM_CHECK(ncclCheck(api, api->groupStart(), "ncclGroupStart"));
    ++t_group_depth;
    return tpcommSuccess;
  }
  tpcommResult_t res = ncclCheck(api, api->groupEnd(), "ncclGroupEnd");
  if (t_group_depth > 0 && --t_group_depth == 0) {
    // Even after a failed group end: an end event with nothing before it completes at once.
    std::vector<GroupedCall> calls = std::move(t_grouped);
    t_grouped.clear();
    for (GroupedCall& g : calls) {
      const tpcommResult_t r = g.watch->finish(g.stream, g.start, std::move(g.what));
      if (res == tpcommSuccess) res = r;
    }
  }
  return res;
}

}  // namespace tpcomm
