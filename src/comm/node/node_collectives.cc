#include "comm/node/node_collectives.h"

#include <cstring>
#include <string>

#include "comm/call/call_common.h"
#include "comm/call/local_calls.h"
#include "comm/call/nccl_fallback.h"
#include "comm/call/poison_outputs.h"
#include "comm/call/run_call.h"
#include "comm/checks/validate.h"
#include "comm/checks/validate_rsag.h"
#include "comm/node/node_link.h"
#include "common/error.h"
#include "kernels/runtime/algo_launch.h"
#include "plan/planner.h"

namespace tpcomm {
namespace {

// The NCCL leg counted as what it is: a planned leg, never a fallback.
void recordLeg(tpcommComm* c, size_t bytes, tpcommDataType_t dt, bool capturing) {
  static const std::string kWhy = "the NCCL leg between machines";
  recordCall(c, CallRecord{tpcommAlgoNccl, ncclVariant(), false, bytes, dt, 0, &kWhy, "node"},
             capturing);
}

// The last-call info names the whole call once its legs recorded themselves.
void recordWhole(tpcommComm* c, const tpcommCallInfo_t& first, size_t bytes, tpcommDataType_t dt,
                 const std::string& text) {
  c->last = first;
  c->last.bytes = bytes;
  c->last.datatype = static_cast<int>(dt);
  memset(c->last.reason, 0, sizeof(c->last.reason));
  strncpy(c->last.reason, text.c_str(), sizeof(c->last.reason) - 1);
}

// The first leg's record (or NCCL's, where no intra-node leg runs).
tpcommCallInfo_t ncclOnly() {
  tpcommCallInfo_t i{};
  i.algo = tpcommAlgoNccl;
  i.variant = ncclVariant();
  return i;
}

// Stream-ordered scratch (captured as graph memory nodes), freed after the call's legs.
class Scratch {
 public:
  Scratch(cudaStream_t s) : s_(s) {}
  ~Scratch() {
    if (p_) cudaFreeAsync(p_, s_);
  }
  tpcommResult_t get(size_t bytes, char** out) {
    TPCOMM_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&p_), bytes, s_));
    *out = p_;
    return tpcommSuccess;
  }

 private:
  cudaStream_t s_;
  char* p_ = nullptr;
};

// A spanning communicator orders its NCCL legs itself: no call of it inside a group.
tpcommResult_t notInGroup(const char* op) {
  if (ncclGroupOpen())
    return fail(tpcommInvalidUsage,
                "%s: inside tpcommGroupStart/End: a communicator that spans machines orders its "
                "NCCL legs itself; call it outside the group",
                op);
  return tpcommSuccess;
}

tpcommResult_t largeAllReduce(tpcommComm* c, const void* send, void* recv, size_t count,
                              tpcommDataType_t dt, cudaStream_t s, bool capturing,
                              tpcommCallInfo_t* first) {
  const size_t es = dtypeSize(dt);
  const size_t L = static_cast<size_t>(c->world);
  const size_t shard = (count + L - 1) / L;
  char* base = static_cast<char*>(recv);
  Scratch scratch(s);
  if (shard * L != count) {
    // The shards must be equal: the last one is padded with zeros in a scratch copy.
    TPCOMM_CHECK(scratch.get(shard * L * es, &base));
    TPCOMM_CUDA_CHECK(cudaMemcpyAsync(base, send, count * es, cudaMemcpyDeviceToDevice, s));
    TPCOMM_CUDA_CHECK(cudaMemsetAsync(base + count * es, 0, (shard * L - count) * es, s));
    send = base;
  }
  char* mine = base + static_cast<size_t>(c->rank) * shard * es;
  TPCOMM_CHECK(localRsag(tpcommCollReduceScatter, send, mine, shard, dt, c, s, false));
  *first = c->last;
  TPCOMM_CHECK(nodeLinkAllReduce(c, mine, mine, shard, dt, s, capturing));
  recordLeg(c, shard * es, dt, capturing);
  TPCOMM_CHECK(localRsag(tpcommCollAllGather, mine, base, shard, dt, c, s, false));
  if (base != recv)
    TPCOMM_CUDA_CHECK(cudaMemcpyAsync(recv, base, count * es, cudaMemcpyDeviceToDevice, s));
  return tpcommSuccess;
}

// The legs of a spanning reduce-scatter or all-gather (the large shape's halves, or NCCL alone
// with one rank a machine), each recording itself, then the whole call's record.
tpcommResult_t nodeRsagLegs(tpcommColl_t coll, const void* send, void* recv, size_t count,
                            size_t bytes, tpcommDataType_t dt, tpcommComm* c, cudaStream_t s,
                            bool capturing, const std::string& text) {
  const NodeSpan& sp = *c->span;
  const size_t es = dtypeSize(dt);
  const size_t L = static_cast<size_t>(c->world);
  const size_t N = static_cast<size_t>(sp.layout.nodes);
  const size_t leg_bytes = count * es * N;
  tpcommCallInfo_t first = ncclOnly();
  if (L == 1) {
    // One rank a machine: the machines' order is the ranks' order (contiguous).
    TPCOMM_CHECK(nodeLinkRsag(c, coll, send, recv, count, dt, s, capturing));
    recordLeg(c, leg_bytes, dt, capturing);
  } else {
    Scratch scratch(s);
    char* tmp = nullptr;  // N runs of count elements: one per machine
    TPCOMM_CHECK(scratch.get(N * count * es, &tmp));
    const char* in = static_cast<const char*>(send);
    char* out = static_cast<char*>(recv);
    if (coll == tpcommCollReduceScatter) {
      // Machine m's segments, summed over this machine's ranks: run m of tmp holds this rank's
      // segment of them; NCCL then sums run n over the machines for node n.
      for (size_t m = 0; m < N; ++m) {
        TPCOMM_CHECK(
            localRsag(coll, in + m * L * count * es, tmp + m * count * es, count, dt, c, s, false));
        if (m == 0) first = c->last;
      }
      TPCOMM_CHECK(nodeLinkRsag(c, coll, tmp, recv, count, dt, s, capturing));
      recordLeg(c, leg_bytes, dt, capturing);
    } else {
      // Every machine's contribution of this local index, then each machine's block gathered.
      TPCOMM_CHECK(nodeLinkRsag(c, coll, send, tmp, count, dt, s, capturing));
      recordLeg(c, leg_bytes, dt, capturing);
      for (size_t m = 0; m < N; ++m) {
        TPCOMM_CHECK(localRsag(coll, tmp + m * count * es, out + m * L * count * es, count, dt, c,
                               s, false));
        if (m == 0) first = c->last;
      }
    }
  }
  recordWhole(c, first, bytes, dt, text);
  return tpcommSuccess;
}

// A spanning call through the call's pipeline (comm/call/run_call.h), its legs as the launch:
// the caller's buffers checked, the plan the node rules' (spanning), `out` poisoned where the
// link or the local group is broken; legs(plan, stream, capturing) record themselves.
template <typename Legs>
tpcommResult_t runSpanning(tpcommComm* c, cudaStream_t s, const char* op, tpcommColl_t coll,
                           size_t bytes, tpcommDataType_t dt, const void* send, const void* recv,
                           size_t count, OutputSpan out, Legs legs) {
  TPCOMM_CHECK(notInGroup(op));
  Call call{bytes, true, coll};
  call.dtype = dt;
  const CallSteps steps{op,
                        call,
                        bytes,
                        {{send, "sendbuff"}, {recv, "recvbuff"}},
                        {out},
                        /*check_buffers=*/true,
                        /*nothing=*/count == 0,
                        /*spanning=*/true,
                        /*records_itself=*/true};
  return runCall(c, s, steps, [&](const CallPlan& p, cudaStream_t st, bool capturing, CallRecord*) {
    return legs(p, st, capturing);
  });
}

}  // namespace

tpcommResult_t nodeAllReduce(const void* send, void* recv, size_t count, tpcommDataType_t dt,
                             int op, tpcommComm* c, cudaStream_t s) {
  const char* name = "tpcommAllReduce";
  TPCOMM_CHECK(nodeLinkReady(c, name));  // a spanning communicator's calls need its link
  size_t bytes = 0;
  TPCOMM_CHECK(validateAllReduceArgs(send, recv, count, static_cast<int>(dt), op, &bytes));
  // The legs record themselves; a broken link or local group poisons recv.
  return runSpanning(
      c, s, name, tpcommCollAllReduce, bytes, dt, send, recv, count,
      allReduceOutput(recv, count, dtypeSize(dt)),
      [&](const CallPlan& p, cudaStream_t st, bool capturing) -> tpcommResult_t {
        const NodeLegs& legs = p.node;
        tpcommCallInfo_t first = ncclOnly();
        if (c->world == 1) {
          TPCOMM_CHECK(nodeLinkAllReduce(c, send, recv, count, dt, st, capturing));
          recordLeg(c, bytes, dt, capturing);
        } else if (legs.shape == NodeShape::kSmall) {
          // Every local rank then holds the same bits, and with two machines every local index's
          // NCCL sum of them is the same a + b (plan/node_plan.cc).
          TPCOMM_CHECK(localAllReduce(send, recv, count, dt, op, c, st, false));
          first = c->last;
          TPCOMM_CHECK(nodeLinkAllReduce(c, recv, recv, count, dt, st, capturing));
          recordLeg(c, bytes, dt, capturing);
        } else {
          TPCOMM_CHECK(largeAllReduce(c, send, recv, count, dt, st, capturing, &first));
        }
        recordWhole(c, first, bytes, dt, legs.text);
        return tpcommSuccess;
      });
}

tpcommResult_t nodeRsag(tpcommColl_t coll, const void* send, void* recv, size_t count,
                        tpcommDataType_t dt, tpcommComm* c, cudaStream_t s) {
  const char* name = collOpName(coll);
  TPCOMM_CHECK(nodeLinkReady(c, name));  // a spanning communicator's calls need its link
  const NodeSpan& sp = *c->span;
  size_t bytes = 0;
  TPCOMM_CHECK(validateRsagArgs(coll, send, recv, count, static_cast<int>(dt), sp.global_rank,
                                sp.global_world, &bytes));
  // The node rules refuse ranks of a machine that are not consecutive (the plan's error, with
  // why).
  return runSpanning(c, s, name, coll, bytes, dt, send, recv, count,
                     rsagOutput(coll, recv, count, dtypeSize(dt), sp.global_world),
                     [&](const CallPlan& p, cudaStream_t st, bool capturing) {
                       return nodeRsagLegs(coll, send, recv, count, bytes, dt, c, st, capturing,
                                           p.node.text);
                     });
}

tpcommResult_t nodeExplain(const tpcommComm* c, tpcommColl_t coll, tpcommDataType_t dt,
                           size_t bytes, tpcommCallInfo_t* info) {
  Call call{bytes, true, coll};
  call.dtype = dt;
  const CallPlan p = planCall(spanFactsOf(c), call);
  *info = tpcommCallInfo_t{};
  info->bytes = bytes;
  info->datatype = static_cast<int>(dt);
  strncpy(info->reason, p.node.text.c_str(), sizeof(info->reason) - 1);
  info->algo = p.decision.algo;
  info->variant = p.variant;
  info->blocks = isKernelVariant(p.variant) ? p.grid.blocks : 0;
  if (p.decision.error != tpcommSuccess)
    return fail(p.decision.error, "%s", p.decision.reason.c_str());
  return tpcommSuccess;
}

}  // namespace tpcomm
