#include "comm/checks/validate_rsag.h"

#include <cstdint>

#include "comm/checks/validate.h"
#include "common/error.h"

namespace tpcomm {

const char* collOpName(tpcommColl_t coll) {
  switch (coll) {
    case tpcommCollAllReduce:
      return "tpcommAllReduce";
    case tpcommCollReduceScatter:
      return "tpcommReduceScatter";
    case tpcommCollAllGather:
      return "tpcommAllGather";
    default:
      return "an unknown collective";
  }
}

tpcommResult_t validateRsagArgs(tpcommColl_t coll, const void* send, const void* recv, size_t count,
                                int datatype, int rank, int world, size_t* bytes) {
  const char* op = collOpName(coll);
  const bool rs = coll == tpcommCollReduceScatter;
  const char* count_name = rs ? "recvcount" : "sendcount";
  size_t part = 0;
  TPCOMM_CHECK(payloadBytes(op, count, datatype, &part));
  if (world < 1 || part > SIZE_MAX / static_cast<size_t>(world))
    return fail(tpcommInvalidArgument, "%s: %s %zu x world %d overflows the byte size", op,
                count_name, count, world);
  *bytes = part * static_cast<size_t>(world);
  if (count == 0) return tpcommSuccess;  // nothing moves; NCCL allows it too
  if (!send) return fail(tpcommInvalidArgument, "%s: sendbuff is NULL", op);
  if (!recv) return fail(tpcommInvalidArgument, "%s: recvbuff is NULL", op);
  const size_t esize = elementBytes(datatype);
  if (reinterpret_cast<uintptr_t>(send) % esize || reinterpret_cast<uintptr_t>(recv) % esize)
    return fail(tpcommInvalidArgument,
                "%s: sendbuff %p / recvbuff %p are not aligned to the %zu-byte element size", op,
                send, recv, esize);
  // The per-rank buffer may only be this rank's run of the whole one.
  const uintptr_t whole = reinterpret_cast<uintptr_t>(rs ? send : recv);
  const uintptr_t mine = reinterpret_cast<uintptr_t>(rs ? recv : send);
  const uintptr_t in_place = whole + static_cast<uintptr_t>(rank) * part;
  if (mine != in_place && mine < whole + *bytes && whole < mine + part)
    return fail(tpcommInvalidArgument,
                "%s: sendbuff %p and recvbuff %p overlap without being in place (in place means "
                "%s == %s + rank * %s, here %p for rank %d)",
                op, send, recv, rs ? "recvbuff" : "sendbuff", rs ? "sendbuff" : "recvbuff",
                count_name, reinterpret_cast<void*>(in_place), rank);
  return tpcommSuccess;
}

}  // namespace tpcomm
