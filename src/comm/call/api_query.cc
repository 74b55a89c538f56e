// The small C entry points: versions, errors, names, communicator queries, statistics, groups.
#include <cstddef>

#include "comm/call/call_common.h"
#include "comm/call/nccl_fallback.h"
#include "comm/comm.h"
#include "comm/lifecycle/registry.h"
#include "comm/node/node_link.h"
#include "common/error.h"
#include "common/result_table.h"
#include "kernels/runtime/variant_table.h"

using namespace tpcomm;

namespace {

// A query of one value: the communicator checked, `out` not NULL (an error naming `name`), then
// *out = get(comm).
template <typename T, typename Get>
tpcommResult_t queryOf(tpcommComm_t comm, const char* op, const char* name, T* out, Get get) {
  TPCOMM_CHECK(checkComm(comm, op));
  if (!out) return fail(tpcommInvalidArgument, "%s: %s is NULL", op, name);
  *out = get(comm);
  return tpcommSuccess;
}

}  // namespace

extern "C" {

tpcommResult_t tpcommGetVersion(int* version) {
  if (!version) return fail(tpcommInvalidArgument, "tpcommGetVersion: version is NULL");
  *version = TPCOMM_VERSION_CODE;
  return tpcommSuccess;
}

const char* tpcommGetErrorString(tpcommResult_t result) {
  const ResultInfo* info = resultInfo(result);
  return info ? info->description : "unknown result code";
}

const char* tpcommGetLastError(void) {
  return lastError();
}

const char* tpcommAlgoName(int algo) {
  switch (algo) {
    case tpcommAlgoAuto:
      return "auto";
    case tpcommAlgoOneShot:
      return "oneshot";
    case tpcommAlgoTwoShot:
      return "twoshot";
    case tpcommAlgoNccl:
      return "nccl";
    case tpcommAlgoHostOneShot:
      return "host_oneshot";
    case tpcommAlgoHostTwoShot:
      return "host_twoshot";
    case tpcommAlgoIsland:
      return "island";
    case tpcommAlgoHostBulk:
      return "host_bulk";
    case tpcommAlgoOneShotPull:
      return "oneshot_pull";
    case tpcommAlgoTwoShotPull:
      return "twoshot_pull";
    case tpcommAlgoOneShotCe:
      return "oneshot_ce";
    case tpcommAlgoIslandPull:
      return "island_pull";
    default:
      return nullptr;
  }
}

const char* tpcommVariantName(int variant) {
  const VariantRow* r = variantRow(variant);
  return r ? r->name : nullptr;
}

tpcommResult_t tpcommCommCount(tpcommComm_t comm, int* nranks) {
  return queryOf(comm, "tpcommCommCount", "nranks", nranks,
                 [](tpcommComm_t c) { return c->span ? c->span->global_world : c->world; });
}

tpcommResult_t tpcommCommUserRank(tpcommComm_t comm, int* rank) {
  return queryOf(comm, "tpcommCommUserRank", "rank", rank,
                 [](tpcommComm_t c) { return c->span ? c->span->global_rank : c->rank; });
}

tpcommResult_t tpcommCommCuDevice(tpcommComm_t comm, int* device) {
  return queryOf(comm, "tpcommCommCuDevice", "device", device,
                 [](tpcommComm_t c) { return c->device; });
}

tpcommResult_t tpcommCommGetAsyncError(tpcommComm_t comm, tpcommResult_t* asyncError) {
  TPCOMM_CHECK(checkComm(comm, "tpcommCommGetAsyncError"));
  if (!asyncError)
    return fail(tpcommInvalidArgument, "tpcommCommGetAsyncError: asyncError is NULL");
  const HostError* e = comm->staging.host_error;
  *asyncError = e ? static_cast<tpcommResult_t>(e->code) : tpcommSuccess;
  if (*asyncError == tpcommSuccess &&
      ((comm->nccl_watch && comm->nccl_watch->hung()) || nodeLinkHung(comm, nullptr)))
    *asyncError = tpcommTimeout;
  // The reason (which peer, or both calls of a mismatch) goes to tpcommGetLastError.
  if (*asyncError != tpcommSuccess) (void)checkAsync(comm, "tpcommCommGetAsyncError");
  return tpcommSuccess;
}

static_assert(tpcommNumAlgos <= TPCOMM_STATS_MAX_ALGOS,
              "tpcommStats_t::calls has no room for every algorithm: raise TPCOMM_STATS_MAX_ALGOS "
              "(an ABI change)");

// tpcommCallInfo_t::variant sits in what was padding after `algo`: the struct's size and the
// other fields' offsets are those of the releases before it, so old callers keep working.
static_assert(offsetof(tpcommCallInfo_t, variant) == 4 && offsetof(tpcommCallInfo_t, bytes) == 8 &&
                  offsetof(tpcommCallInfo_t, reason) == 24 && sizeof(tpcommCallInfo_t) == 184,
              "tpcommCallInfo_t's layout changed (an ABI change)");

tpcommResult_t tpcommCommGetStats(tpcommComm_t comm, tpcommStats_t* stats) {
  return queryOf(comm, "tpcommCommGetStats", "stats", stats,
                 [](tpcommComm_t c) { return c->stats; });
}

tpcommResult_t tpcommCommGetPtxJitCalls(tpcommComm_t comm, uint64_t* calls) {
  return queryOf(comm, "tpcommCommGetPtxJitCalls", "calls", calls,
                 [](tpcommComm_t c) { return c->ptx_jit_calls; });
}

tpcommResult_t tpcommCommGetLastCall(tpcommComm_t comm, tpcommCallInfo_t* info) {
  return queryOf(comm, "tpcommCommGetLastCall", "info", info,
                 [](tpcommComm_t c) { return c->last; });
}

tpcommResult_t tpcommCommGetVariantStats(tpcommComm_t comm, uint64_t* calls, int n) {
  TPCOMM_CHECK(checkComm(comm, "tpcommCommGetVariantStats"));
  if (!calls || n < 0)
    return fail(tpcommInvalidArgument, "tpcommCommGetVariantStats: calls is %s, n = %d",
                calls ? "set" : "NULL", n);
  for (int v = 0; v < n; ++v) calls[v] = v < tpcommNumVariants ? comm->variant_calls[v] : 0;
  return tpcommSuccess;
}

tpcommResult_t tpcommGroupStart(void) {
  return ncclGroup(true);
}
tpcommResult_t tpcommGroupEnd(void) {
  return ncclGroup(false);
}

}  // extern "C"
