// The links between machines of a communicator that spans them (docs/MULTINODE.md): at
// tpcommCommInitRankEnd the handles are grouped by host id and the local group is initialised as
// a single-machine communicator; tpcommCommNodeLinkBegin/End (a second exchange of handles) then
// create one NCCL communicator per local index over the machines. The NCCL unique id is made only
// by the rank that leads its local index, once the first exchange has said which rank that is:
// ncclGetUniqueId starts a listener thread that only a completed NCCL init ends, so ids made
// speculatively by every rank would leak one per rank.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "comm/comm.h"

namespace tpcomm {

// At End: groups the handles; on one machine does nothing (c->span stays null). Else makes
// c->span, rewrites c->rank / c->world to the local group's and *local to its handles.
tpcommResult_t nodeSplit(tpcommComm* c, const RankInfo* all, std::vector<RankInfo>* local);
// Joins the watch, then destroys the link unless the watch aborted it.
void nodeLinkDestroy(tpcommComm* c);
// A collective's gate: tpcommInvalidUsage "not linked" until NodeLinkEnd succeeded; a link the
// watch aborted, or that reported an error: tpcommTimeout / tpcommNcclError.
tpcommResult_t nodeLinkReady(const tpcommComm* c, const char* op);
// Whether an eager NCCL leg hung (for checkAsync and tpcommCommGetAsyncError), and why.
bool nodeLinkHung(const tpcommComm* c, std::string* report);

// The NCCL legs, on the link of this rank's local index, watched like the fallback's calls
// (captured calls are not watched). count: elements per rank for reduce_scatter / all_gather.
tpcommResult_t nodeLinkAllReduce(tpcommComm* c, const void* send, void* recv, size_t count,
                                 tpcommDataType_t dt, cudaStream_t s, bool capturing);
tpcommResult_t nodeLinkRsag(tpcommComm* c, tpcommColl_t coll, const void* send, void* recv,
                            size_t count, tpcommDataType_t dt, cudaStream_t s, bool capturing);

}  // namespace tpcomm
