// The collectives of a communicator that spans machines (docs/MULTINODE.md): intra-node legs run
// by tpcomm over the local group (comm/call/local_calls.h), inter-node legs by NCCL over the link
// of the rank's local index (comm/node/node_link.h), in the shape plan/node_plan.h picks.
#pragma once

#include <cuda_runtime_api.h>

#include "comm/comm.h"

namespace tpcomm {

tpcommResult_t nodeAllReduce(const void* send, void* recv, size_t count, tpcommDataType_t dt,
                             int op, tpcommComm* c, cudaStream_t s);
tpcommResult_t nodeRsag(tpcommColl_t coll, const void* send, void* recv, size_t count,
                        tpcommDataType_t dt, tpcommComm* c, cudaStream_t s);
// tpcommCommExplain / ExplainCollective: bytes is the payload (reduce-scatter / all-gather: the
// global world x the count's bytes). The variant is the first intra-node leg's (NCCL's on
// machines of one rank); the reason names every leg.
tpcommResult_t nodeExplain(const tpcommComm* c, tpcommColl_t coll, tpcommDataType_t dt,
                           size_t bytes, tpcommCallInfo_t* info);

}  // namespace tpcomm
