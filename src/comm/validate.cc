#include "comm/validate.h"

#include <cstdint>

#include "common/error.h"

namespace tpcomm {

tpcommResult_t validateAllReduceArgs(const void* send, const void* recv, size_t count, int datatype,
                                     int op, size_t* bytes) {
  if (!send) return fail(tpcommInvalidArgument, "tpcommAllReduce: sendbuff is NULL");
  if (!recv) return fail(tpcommInvalidArgument, "tpcommAllReduce: recvbuff is NULL");
  if (count == 0)
    return fail(tpcommInvalidArgument, "tpcommAllReduce: count is 0 (nothing to reduce)");
  size_t esize = 0;
  switch (datatype) {
    case tpcommFloat32:
      esize = 4;
      break;
    case tpcommFloat16:
    case tpcommBfloat16:
      esize = 2;
      break;
    default:
      return fail(tpcommInvalidArgument,
                  "tpcommAllReduce: datatype %d is not supported (tpcommFloat32=%d, "
                  "tpcommFloat16=%d, tpcommBfloat16=%d)",
                  datatype, tpcommFloat32, tpcommFloat16, tpcommBfloat16);
  }
  if (op != tpcommSum)
    return fail(tpcommInvalidArgument, "tpcommAllReduce: op %d is not supported (only tpcommSum)",
                op);
  if (count > SIZE_MAX / esize)
    return fail(tpcommInvalidArgument, "tpcommAllReduce: count %zu overflows the byte size", count);
  if (reinterpret_cast<uintptr_t>(send) % esize || reinterpret_cast<uintptr_t>(recv) % esize)
    return fail(tpcommInvalidArgument,
                "tpcommAllReduce: sendbuff %p / recvbuff %p are not aligned to the %zu-byte "
                "element size",
                send, recv, esize);
  const uintptr_t s = reinterpret_cast<uintptr_t>(send), r = reinterpret_cast<uintptr_t>(recv);
  const size_t b = count * esize;
  if (s != r && s < r + b && r < s + b)
    return fail(tpcommInvalidArgument,
                "tpcommAllReduce: sendbuff and recvbuff overlap without being equal (in place "
                "means sendbuff == recvbuff)");
  *bytes = b;
  return tpcommSuccess;
}

}  // namespace tpcomm
