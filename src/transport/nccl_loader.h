// NCCL, loaded at run time (dlopen), so libtpcomm loads and works on machines without NCCL and
// the fallback is an explicit, reported choice rather than a link-time dependency.
#pragma once

#include <nccl.h>

#include <string>

namespace tpcomm {

struct NcclApi {
  ncclResult_t (*getVersion)(int*);
  ncclResult_t (*getUniqueId)(ncclUniqueId*);
  ncclResult_t (*commInitRank)(ncclComm_t*, int, ncclUniqueId, int);
  ncclResult_t (*commInitAll)(ncclComm_t*, int, const int*);
  ncclResult_t (*commDestroy)(ncclComm_t);
  ncclResult_t (*commAbort)(ncclComm_t);  // ends a hung call (comm/lifecycle/nccl_watchdog.h)
  ncclResult_t (*allReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t);
  ncclResult_t (*reduceScatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                cudaStream_t);
  ncclResult_t (*allGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*groupStart)();
  ncclResult_t (*groupEnd)();
  const char* (*getErrorString)(ncclResult_t);
  const char* (*getLastError)(ncclComm_t);
  // NCCL 2.14+, optional (nullptr when missing): the links between machines (comm/node/node_link.h)
  // need them to bound their init; nothing else does.
  ncclResult_t (*commInitRankConfig)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*);
  ncclResult_t (*commGetAsyncError)(ncclComm_t, ncclResult_t*);
};

// The loaded API, or nullptr with *why set (library path tried and dlerror). Thread-safe; loads
// once.
const NcclApi* ncclApi(std::string* why);

}  // namespace tpcomm
