// The NCCL fallback of a communicator: created at init (never lazily, so a first fallback inside
// CUDA graph capture needs no allocation), or given by the caller (config.ncclComm). Its eager
// calls are bounded by the communicator's timeout (comm/lifecycle/nccl_watchdog.h).
#pragma once

#include <cuda_runtime_api.h>

#include "comm/comm.h"

namespace tpcomm {

// Rank 0 only: with TPCOMM_NCCL=auto and NCCL loadable, puts an NCCL unique id in its handle.
tpcommResult_t ncclFallbackPrepareId(const Settings& s, RankInfo* self);
// After the handle exchange: every rank creates its NCCL communicator when rank 0 asked for one
// and no two ranks share a GPU (NCCL forbids that).
tpcommResult_t ncclFallbackInitRank(tpcommComm* c, const RankInfo* all);
tpcommResult_t ncclFallbackInitAll(tpcommComm** comms, int n, const int* devs);
// Joins the watchdog, then destroys the NCCL communicator unless the watchdog aborted it.
void ncclFallbackDestroy(tpcommComm* c);
// capturing: the stream is capturing a graph; then the call is not watched.
tpcommResult_t ncclFallbackAllReduce(tpcommComm* c, const void* send, void* recv, size_t count,
                                     tpcommDataType_t dtype, cudaStream_t stream, bool capturing);
// tpcommReduceScatter / tpcommAllGather through ncclReduceScatter / ncclAllGather, watched the
// same way. count: the per-rank count (recvcount, sendcount).
tpcommResult_t ncclFallbackRsag(tpcommComm* c, tpcommColl_t coll, const void* send, void* recv,
                                size_t count, tpcommDataType_t dtype, cudaStream_t stream,
                                bool capturing);
// tpcommGroupStart / End. A watched call inside a group is enqueued at the outermost group end,
// so its end event is recorded there.
tpcommResult_t ncclGroup(bool start);
// Whether this thread is inside tpcommGroupStart/End (an open NCCL group).
bool ncclGroupOpen();

}  // namespace tpcomm
