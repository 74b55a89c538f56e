#include "comm/checks/validate.h"

#include <cstdint>

#include "common/error.h"

namespace tpcomm {

size_t elementBytes(int datatype) {
  switch (datatype) {
    case tpcommFloat32:
      return 4;
    case tpcommFloat16:
    case tpcommBfloat16:
      return 2;
    default:
      return 0;
  }
}

tpcommResult_t payloadBytes(const char* op, size_t count, int datatype, size_t* bytes) {
  const size_t esize = elementBytes(datatype);
  if (esize == 0)
    return fail(tpcommInvalidArgument,
                "%s: datatype %d is not supported (tpcommFloat32=%d, tpcommFloat16=%d, "
                "tpcommBfloat16=%d)",
                op, datatype, tpcommFloat32, tpcommFloat16, tpcommBfloat16);
  if (count > SIZE_MAX / esize)
    return fail(tpcommInvalidArgument, "%s: count %zu overflows the byte size (%zu-byte elements)",
                op, count, esize);
  *bytes = count * esize;
  return tpcommSuccess;
}

tpcommResult_t validateAllReduceArgs(const void* send, const void* recv, size_t count, int datatype,
                                     int op, size_t* bytes) {
  if (!send) return fail(tpcommInvalidArgument, "tpcommAllReduce: sendbuff is NULL");
  if (!recv) return fail(tpcommInvalidArgument, "tpcommAllReduce: recvbuff is NULL");
  if (count == 0)
    return fail(tpcommInvalidArgument, "tpcommAllReduce: count is 0 (nothing to reduce)");
  size_t b = 0;
  TPCOMM_CHECK(payloadBytes("tpcommAllReduce", count, datatype, &b));
  if (op != tpcommSum)
    return fail(tpcommInvalidArgument, "tpcommAllReduce: op %d is not supported (only tpcommSum)",
                op);
  const size_t esize = elementBytes(datatype);
  if (reinterpret_cast<uintptr_t>(send) % esize || reinterpret_cast<uintptr_t>(recv) % esize)
    return fail(tpcommInvalidArgument,
                "tpcommAllReduce: sendbuff %p / recvbuff %p are not aligned to the %zu-byte "
                "element size",
                send, recv, esize);
  const uintptr_t s = reinterpret_cast<uintptr_t>(send), r = reinterpret_cast<uintptr_t>(recv);
  if (s != r && s < r + b && r < s + b)
    return fail(tpcommInvalidArgument,
                "tpcommAllReduce: sendbuff and recvbuff overlap without being equal (in place "
                "means sendbuff == recvbuff)");
  *bytes = b;
  return tpcommSuccess;
}

}  // namespace tpcomm
