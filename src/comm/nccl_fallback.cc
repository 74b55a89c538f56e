#include "comm/nccl_fallback.h"

#include <cstring>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "transport/nccl_loader.h"

namespace tpcomm {
namespace {

tpcommResult_t ncclCheck(const NcclApi* api, ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return tpcommSuccess;
  return fail(tpcommNcclError, "%s failed: %s", what, api->getErrorString(r));
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
  if (c->nccl && c->nccl_owned) {
    if (const NcclApi* api = ncclApi(nullptr)) api->commDestroy(c->nccl);
  }
  c->nccl = nullptr;
}

tpcommResult_t ncclFallbackAllReduce(tpcommComm* c, const void* send, void* recv, size_t count,
                                     tpcommDataType_t dtype, cudaStream_t stream) {
  const NcclApi* api = ncclApi(nullptr);
  if (!api || !c->nccl) return fail(tpcommInternalError, "NCCL fallback used without NCCL");
  // tpcommDataType_t values are NCCL's (see tpcomm.h).
  return ncclCheck(api,
                   api->allReduce(send, recv, count, static_cast<ncclDataType_t>(dtype), ncclSum,
                                  c->nccl, stream),
                   "ncclAllReduce");
}

tpcommResult_t ncclGroup(bool start) {
  const NcclApi* api = ncclApi(nullptr);
  if (!api) return tpcommSuccess;
  return ncclCheck(api, start ? api->groupStart() : api->groupEnd(),
                   start ? "ncclGroupStart" : "ncclGroupEnd");
}

}  // namespace tpcomm
