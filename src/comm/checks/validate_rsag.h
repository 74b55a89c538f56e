// Argument checks of tpcommReduceScatter and tpcommAllGather that need no GPU (unit-tested in CI),
// in tpcommAllReduce's words (validate.h).
#pragma once

#include <cstddef>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

// The name of a collective's entry point ("tpcommReduceScatter", ...).
const char* collOpName(tpcommColl_t coll);

// count: the per-rank count (recvcount, sendcount); the whole buffer (reduce-scatter's sendbuff,
// all-gather's recvbuff) holds world x count elements, the other one count. In place only as NCCL
// allows it: the per-rank buffer is rank's run of the whole one. Count 0 is valid and then the
// buffers may be NULL. On success *bytes is the whole message's size.
tpcommResult_t validateRsagArgs(tpcommColl_t coll, const void* send, const void* recv, size_t count,
                                int datatype, int rank, int world, size_t* bytes);

}  // namespace tpcomm
