// tpcommAllReduceAddRmsNorm: validate -> plan (planCall's fused rules) -> the fused one-shot
// kernel, or the all-reduce then the epilogue kernel -> record what ran.
// tpcommCommExplainAddRmsNorm asks the same planner.
#include <cuda_runtime_api.h>

#include <cstring>

#include "comm/call/call_common.h"
#include "comm/call/fused_staging.h"
#include "comm/call/poison_outputs.h"
#include "comm/checks/validate.h"
#include "comm/checks/validate_fused.h"
#include "comm/lifecycle/registry.h"
#include "common/error.h"
#include "kernels/add_rmsnorm.h"
#include "kernels/fused_oneshot.h"

namespace tpcomm {
namespace {

constexpr const char* kOp = "tpcommAllReduceAddRmsNorm";

// The unfused path: the all-reduce into a buffer of the activation dtype (the norm's output, or,
// for FP8 output, residualOut where it is not the residual itself), then the epilogue kernel.
tpcommResult_t runUnfused(tpcommComm* comm, const FusedCallBuffers& b, const EpiloguePlan& e,
                          cudaStream_t s, tpcommStream_t stream) {
  const tpcommRmsNormParams_t& prm = *b.params;
  void* sums = !prm.quantScale                   ? b.norm_out
               : b.residual_out != b.residual_in ? b.residual_out
                                                 : nullptr;
  if (!sums)
    return fail(tpcommUnsupported,
                "%s: FP8 output with the residual updated in place needs the fused kernel, which "
                "does not take this call (%s): pass a separate residualOut",
                kOp, e.reason.c_str());
  const tpcommDataType_t dt = static_cast<tpcommDataType_t>(b.datatype);
  TPCOMM_CHECK(tpcommAllReduce(b.input, sums, b.tokens * b.hidden, dt, tpcommSum, comm, stream));
  const AddRmsNormArgs a{sums,
                         b.residual_in,
                         b.residual_out,
                         b.norm_out,
                         b.gamma,
                         prm.quantScale,
                         b.tokens,
                         b.hidden,
                         dt,
                         prm.eps,
                         prm.weightOffset == 1};
  return launchAddRmsNorm(a, AddRmsNormLaunch{e.variant, {e.blocks, e.threads, e.cluster}}, s);
}

// The fused kernel, on this rank's buffers or on aligned stand-ins for them (staged in and out
// around it where a buffer is not 16-byte aligned: comm/call/fused_staging.h).
tpcommResult_t runFused(tpcommComm* comm, const FusedCallBuffers& b, const EpiloguePlan& e,
                        size_t bytes, size_t norm_bytes, cudaStream_t s) {
  const tpcommRmsNormParams_t& prm = *b.params;
  const tpcommDataType_t dt = static_cast<tpcommDataType_t>(b.datatype);
  const FusedBuffers user{b.input, b.residual_in, b.residual_out, b.norm_out, b.gamma};
  const size_t gamma_bytes = b.hidden * elementBytes(b.datatype);
  const StagingLayout staging = stagingLayout(user, bytes, norm_bytes, gamma_bytes);
  FusedBuffers k;
  TPCOMM_CHECK(stageFusedInputs(comm, staging, user, bytes, gamma_bytes, s, &k));
  const FusedLaunch f{
      FusedParams{k.input, k.residual_in, k.residual_out, k.norm_out, k.gamma, prm.quantScale,
                  b.tokens, b.hidden, e.region, prm.eps, prm.weightOffset},
      dt,
      e.variant,
      e.blocks,
      e.threads,
      e.pdl,
      e.cluster,
      e.one_pass,
      comm->cc_major};
  TPCOMM_CHECK(launchFusedOneShot(comm->dev, f, s));
  return unstageFusedOutputs(staging, user, k, bytes, norm_bytes, s);
}

}  // namespace
}  // namespace tpcomm

using namespace tpcomm;

extern "C" tpcommResult_t tpcommAllReduceAddRmsNorm(const void* input, const void* residualIn,
                                                    void* residualOut, void* normOut,
                                                    const void* gamma, size_t tokens, size_t hidden,
                                                    tpcommDataType_t datatype,
                                                    const tpcommRmsNormParams_t* params,
                                                    tpcommComm_t comm, tpcommStream_t stream) {
  TPCOMM_CHECK(checkComm(comm, kOp));
  const FusedCallBuffers b{input, residualIn, residualOut, normOut,
                           gamma, tokens,     hidden,      static_cast<int>(datatype),
                           params};
  size_t bytes = 0;
  TPCOMM_CHECK(validateFusedArgs(b, comm->cc_major, comm->cc_minor, &bytes));
  if (tokens == 0) return checkAsync(comm, kOp);  // nothing to compute, nothing to poison
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  DeviceGuard guard(comm->device);
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  TPCOMM_CHECK(checkStream(comm, s, kOp, &cap));
  TPCOMM_CHECK(checkCallBuffers(comm, kOp, cap,
                                {{input, "input"},
                                 {residualIn, "residualIn"},
                                 {residualOut, "residualOut"},
                                 {normOut, "normOut"},
                                 {gamma, "gamma"},
                                 {params->quantScale, "params->quantScale"}}));
  // A broken communicator: the error, and NaN in residualOut and normOut
  // (comm/call/poison_outputs.h).
  const FusedOutputs outs = fusedOutputs(residualOut, normOut, tokens, hidden,
                                         elementBytes(datatype), params->quantScale != nullptr);
  TPCOMM_CHECK(refuseIfBroken(comm, kOp, s, cap, {outs.residual, outs.norm}));

  // Planned from what every rank shares (the shapes: a Call holds no pointer fact); a rank whose
  // buffers are not all aligned stages them below (comm/call/fused_staging.h).
  const CallPlan& p =
      plannedCall(comm, fusedCall(tokens, hidden, datatype, params->quantScale != nullptr),
                  /*spanning=*/comm->span != nullptr);
  const EpiloguePlan& e = p.epilogue;
  const Decision& d = p.decision;
  if (d.error != tpcommSuccess)
    return fail(d.error, "%s: %zu bytes on rank %d: %s", kOp, bytes, comm->rank, d.reason.c_str());
  // The unfused pair then finds this stream in tpcommAllReduce's order, and its epilogue kernel
  // follows it on the same stream.
  TPCOMM_CHECK(orderCall(&comm->order, s, cap, kOp, comm->rank));
  // Across machines the plan is never fused (its kernels would sum one machine only): the
  // hierarchical all-reduce (tpcommAllReduce), then the epilogue kernel.
  if (isFusedVariant(e.variant)) {
    TPCOMM_CHECK(runFused(comm, b, e, bytes, outs.norm.bytes, s));
    TPCOMM_CHECK(afterCall(&comm->order, s, cap));
    recordCall(comm,
               CallRecord{d.algo, e.variant, d.fallback, bytes, datatype, e.blocks, &e.reason,
                          "allreduce+rmsnorm"},
               cap != cudaStreamCaptureStatusNone);
    return tpcommSuccess;
  }
  const tpcommResult_t unfused = runUnfused(comm, b, e, s, stream);
  if (unfused != tpcommSuccess) {
    // Broken since this call's own check (its all-reduce was refused, the epilogue never ran):
    // both outputs are NaN all the same.
    TPCOMM_CHECK(refuseIfBroken(comm, kOp, s, cap, {outs.residual, outs.norm}));
    return unfused;
  }
  CallRecord r{d.algo, e.variant, d.fallback, bytes, datatype, 0, &e.reason, "allreduce+rmsnorm"};
  r.epilogue = true;
  recordCall(comm, r, cap != cudaStreamCaptureStatusNone);
  return tpcommSuccess;
}

extern "C" tpcommResult_t tpcommCommExplainAddRmsNorm(tpcommComm_t comm, size_t tokens,
                                                      size_t hidden, tpcommDataType_t datatype,
                                                      const tpcommRmsNormParams_t* params,
                                                      tpcommCallInfo_t* info) {
  TPCOMM_CHECK(checkComm(comm, "tpcommCommExplainAddRmsNorm"));
  if (!info) return fail(tpcommInvalidArgument, "tpcommCommExplainAddRmsNorm: info is NULL");
  size_t bytes = 0;
  TPCOMM_CHECK(fusedPayloadBytes("tpcommCommExplainAddRmsNorm", tokens, hidden,
                                 static_cast<int>(datatype), &bytes));
  const bool fp8 = params && params->quantScale;
  const CallPlan p = planCall(spanFactsOf(comm), fusedCall(tokens, hidden, datatype, fp8));
  const EpiloguePlan& e = p.epilogue;
  if (comm->span) {
    // The hierarchical all-reduce's legs (their Explain), then the planned epilogue kernel.
    const tpcommResult_t r = tpcommCommExplain(comm, tokens * hidden, datatype, info);
    info->variant = e.variant;
    return r;
  }
  *info = tpcommCallInfo_t{};
  info->algo = p.decision.error == tpcommSuccess ? p.decision.algo : tpcommAlgoAuto;
  info->variant = e.variant;
  info->bytes = bytes;
  info->datatype = static_cast<int>(datatype);
  info->blocks = isFusedVariant(e.variant)    ? e.blocks
                 : isKernelVariant(p.variant) ? p.grid.blocks
                                              : 0;
  strncpy(info->reason, e.reason.c_str(), sizeof(info->reason) - 1);
  return p.decision.error;
}
