// The single-machine collectives over a communicator's local group: what tpcommAllReduce,
// tpcommReduceScatter and tpcommAllGather run on a communicator of one machine, and the
// intra-node legs of one that spans machines (comm/node/node_collectives.h) call directly.
#pragma once

#include <cuda_runtime_api.h>

#include "comm/comm.h"

namespace tpcomm {

// check_buffers: false only for a hierarchical call's own scratch (stream-ordered memory that a
// capture has not materialised yet), after it checked the caller's buffers. wire: the call's
// quantized wire (Call::wire; -1 the communicator's).
tpcommResult_t localAllReduce(const void* send, void* recv, size_t count, tpcommDataType_t dt,
                              int op, tpcommComm* c, cudaStream_t s, bool check_buffers,
                              int wire = -1);
tpcommResult_t localRsag(tpcommColl_t coll, const void* send, void* recv, size_t count,
                         tpcommDataType_t dt, tpcommComm* c, cudaStream_t s, bool check_buffers);

}  // namespace tpcomm
