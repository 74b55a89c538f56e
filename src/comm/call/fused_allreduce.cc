// tpcommAllReduceAddRmsNorm: validate, then the call's pipeline (run_call.h) around the fused
// kernel the plan chose (planCall's fused rules), or the all-reduce then the epilogue kernel.
// tpcommCommExplainAddRmsNorm asks the same planner.
#include <cuda_runtime_api.h>

#include <cstring>

#include "comm/call/call_common.h"
#include "comm/call/fused_staging.h"
#include "comm/call/poison_outputs.h"
#include "comm/call/run_call.h"
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
  // Full precision whatever the communicator's quantized wire (wire 0): the fused call never
  // takes the codec (docs/PROTOCOL.md, "Where, and in which form"), unfused or not.
  TPCOMM_CHECK(
      tpcommAllReduceWire(b.input, sums, b.tokens * b.hidden, dt, tpcommSum, 0, comm, stream));
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
  return launchAddRmsNorm(a, AddRmsNormLaunch{e.variant, {e.blocks, e.threads}}, s);
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
                  b.tokens, b.hidden, e.region, prm.eps, prm.weightOffset, e.check_block ? 1 : 0},
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
  const bool fp8 = params->quantScale != nullptr;
  const FusedOutputs outs =
      fusedOutputs(residualOut, normOut, tokens, hidden, elementBytes(datatype), fp8);
  // Planned from what every rank shares (the shapes: a Call holds no pointer fact); a rank whose
  // buffers are not all aligned stages them (comm/call/fused_staging.h). Across machines the
  // plan is never fused (its kernels would sum one machine only): the hierarchical all-reduce
  // (tpcommAllReduce), then the epilogue kernel.
  const CallSteps steps{kOp,
                        fusedCall(tokens, hidden, datatype, fp8),
                        bytes,
                        {{input, "input"},
                         {residualIn, "residualIn"},
                         {residualOut, "residualOut"},
                         {normOut, "normOut"},
                         {gamma, "gamma"},
                         {params->quantScale, "params->quantScale"}},
                        {outs.residual, outs.norm},
                        /*check_buffers=*/true,
                        /*nothing=*/false,
                        /*spanning=*/comm->span != nullptr};
  return runCall(comm, reinterpret_cast<cudaStream_t>(stream), steps,
                 [&](const CallPlan& p, cudaStream_t s, bool, CallRecord* rec) -> tpcommResult_t {
                   const EpiloguePlan& e = p.epilogue;
                   const Decision& d = p.decision;
                   const bool fused = isFusedVariant(e.variant);
                   *rec = CallRecord{d.algo,    e.variant,          d.fallback,
                                     bytes,     datatype,           fused ? e.blocks : 0,
                                     &e.reason, "allreduce+rmsnorm"};
                   if (fused) return runFused(comm, b, e, bytes, outs.norm.bytes, s);
                   rec->epilogue = true;  // the all-reduce recorded itself
                   // The unfused pair finds this stream in tpcommAllReduce's order, and its
                   // epilogue kernel follows it on the same stream.
                   const tpcommResult_t unfused = runUnfused(comm, b, e, s, stream);
                   if (unfused == tpcommSuccess) return unfused;
                   // Broken since this call's own check (its all-reduce was refused, the epilogue
                   // never ran): both outputs are NaN all the same, and the error is the
                   // communicator's.
                   const tpcommResult_t broken = checkAsync(comm, kOp);
                   if (broken == tpcommSuccess) return unfused;
                   if (!fillPoison({outs.residual, outs.norm}, s)) cudaGetLastError();
                   return broken;
                 });
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
