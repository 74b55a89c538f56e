// The NCCL fallback of a communicator: created at init (never lazily, so a first fallback inside
// CUDA graph capture needs no allocation), or given by the caller (config.ncclComm).
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
void ncclFallbackDestroy(tpcommComm* c);
tpcommResult_t ncclFallbackAllReduce(tpcommComm* c, const void* send, void* recv, size_t count,
                                     tpcommDataType_t dtype, cudaStream_t stream);
tpcommResult_t ncclGroup(bool start);

}  // namespace tpcomm
