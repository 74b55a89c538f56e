// Argument checks of tpcommAllReduce that need no GPU (unit-tested in CI). Each failure records a
// message naming the argument and its value.
#pragma once

#include <cstddef>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

// On success *bytes is the payload size.
tpcommResult_t validateAllReduceArgs(const void* send, const void* recv, size_t count, int datatype,
                                     int op, size_t* bytes);

// 4 or 2 for the datatypes tpcomm reduces, 0 for any other value.
size_t elementBytes(int datatype);

// The byte size of count elements of datatype, for every call that takes a count (tpcommAllReduce,
// tpcommCommExplain): tpcommInvalidArgument, naming op, for a datatype tpcomm does not reduce or a
// count whose byte size does not fit in size_t.
tpcommResult_t payloadBytes(const char* op, size_t count, int datatype, size_t* bytes);

}  // namespace tpcomm
