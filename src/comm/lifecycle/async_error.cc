#include "comm/lifecycle/async_error.h"

#include "common/str_format.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {
namespace {

const char* kindName(int kind) {
  switch (kind) {
    case kCallAllReduce:
      return "all-reduce";
    case kCallFused:
      return "all-reduce + add + RMSNorm";
    case kCallFusedFp8:
      return "all-reduce + add + RMSNorm + FP8";
    case kCallReduceScatter:
      return "reduce-scatter";
    case kCallAllGather:
      return "all-gather";
    case kCallAllReduceInt8:
      return "all-reduce over the int8 wire";
    case kCallAllReduceInt4:
      return "all-reduce over the int4 wire";
    case kCallAllReduceFp8:
      return "all-reduce over the fp8 wire";
    case kCallAllReduceFp8E5m2:
      return "all-reduce over the fp8_e5m2 wire";
  }
  return "unknown call";
}

const char* dtypeName(int dtype) {
  static const char* const kNames[] = {"fp32", "fp16", "bf16"};
  return dtype >= 0 && dtype < 3 ? kNames[dtype] : "unknown type";
}

CallPrint readPrint(const volatile CallPrint& p) {
  CallPrint out;
  out.count = p.count;
  out.dtype = p.dtype;
  out.kind = p.kind;
  return out;
}

}  // namespace

AsyncError readAsyncError(const HostError& e) {
  AsyncError a;
  a.code = e.code;
  a.peer = e.peer;
  a.step = e.step;
  a.never_started = e.never_started;
  a.mismatch_peer = e.mismatch_peer;
  a.mismatch_step = e.mismatch_step;
  a.mine = readPrint(e.mine);
  a.theirs = readPrint(e.theirs);
  a.concurrent = e.concurrent;
  return a;
}

std::string describeCall(const CallPrint& p) {
  return strFormat("%s of %llu x %s", kindName(p.kind), p.count, dtypeName(p.dtype));
}

std::string asyncErrorMessage(const char* op, int rank, int timeout_ms, const AsyncError& e) {
  if (e.code == tpcommInvalidUsage && e.concurrent != 0)
    return strFormat(
        "%s: rank %d's communicator is broken: two of its calls ran at the same time (CUDA graphs "
        "holding its calls launched concurrently on two streams, or with its eager calls on "
        "another stream), so both read the same slots. Destroy the communicator, and launch such "
        "graphs one after another",
        op, rank);
  if (e.code == tpcommInvalidUsage)
    return strFormat(
        "%s: rank %d's communicator is broken: the ranks disagreed on a call: rank %d called %s, "
        "rank %d (this rank) %s (the call at step epoch %d). Every rank must make the same calls "
        "with the same count and datatype; destroy the communicator",
        op, rank, e.mismatch_peer, describeCall(e.theirs).c_str(), rank,
        describeCall(e.mine).c_str(), e.mismatch_step);
  if (e.code == tpcommTimeout && e.never_started > 0)
    return strFormat(
        "%s: rank %d's communicator is broken: an earlier call waited %d ms for rank %d (step "
        "%d), which never started that call: it is dead or stuck, or it called with a different "
        "count or datatype, which took another path there (NCCL). Destroy the communicator (and "
        "check that peer)",
        op, rank, timeout_ms, e.never_started - 1, e.step);
  return strFormat(
      "%s: rank %d's communicator is broken: an earlier call waited %d ms for rank %d (step %d) "
      "and gave up. Destroy the communicator (and check that peer)",
      op, rank, timeout_ms, e.peer, e.step);
}

}  // namespace tpcomm
