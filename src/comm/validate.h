// Argument checks of tpcommAllReduce that need no GPU (unit-tested in CI). Each failure records a
// message naming the argument and its value.
#pragma once

#include <cstddef>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

// On success *bytes is the payload size.
tpcommResult_t validateAllReduceArgs(const void* send, const void* recv, size_t count, int datatype,
                                     int op, size_t* bytes);

}  // namespace tpcomm
