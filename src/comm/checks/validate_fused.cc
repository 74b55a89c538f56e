#include "comm/checks/validate_fused.h"

#include <cmath>
#include <cstdint>

#include "comm/checks/validate.h"
#include "common/error.h"

namespace tpcomm {
namespace {

constexpr const char* kOp = "tpcommAllReduceAddRmsNorm";

bool overlap(const void* a, size_t an, const void* b, size_t bn) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + bn && y < x + an;
}

// Either the same buffer (an in-place form the API allows) or apart.
tpcommResult_t sameOrApart(const void* a, const char* an, const void* b, const char* bn, size_t n) {
  if (a == b || !overlap(a, n, b, n)) return tpcommSuccess;
  return fail(tpcommInvalidArgument, "%s: %s and %s overlap without being the same buffer", kOp, an,
              bn);
}

tpcommResult_t apart(const void* a, const char* an, size_t na, const void* b, const char* bn,
                     size_t nb) {
  if (!overlap(a, na, b, nb)) return tpcommSuccess;
  return fail(tpcommInvalidArgument,
              "%s: %s and %s overlap (only residualOut == residualIn and "
              "normOut == input may alias)",
              kOp, an, bn);
}

}  // namespace

tpcommResult_t fusedPayloadBytes(const char* op, size_t tokens, size_t hidden, int datatype,
                                 size_t* bytes) {
  if (hidden == 0 || hidden > kMaxRmsNormHidden)
    return fail(tpcommInvalidArgument, "%s: hidden is %zu; it must be 1..%zu", op, hidden,
                kMaxRmsNormHidden);
  size_t row = 0;
  TPCOMM_CHECK(payloadBytes(op, hidden, datatype, &row));
  if (tokens > SIZE_MAX / row)
    return fail(tpcommInvalidArgument, "%s: %zu tokens x %zu overflows the byte size", op, tokens,
                hidden);
  *bytes = tokens * row;
  return tpcommSuccess;
}

tpcommResult_t validateFusedArgs(const FusedCallBuffers& a, int cc_major, int cc_minor,
                                 size_t* bytes) {
  const struct {
    const void* p;
    const char* name;
  } ptrs[] = {{a.input, "input"},
              {a.residual_in, "residualIn"},
              {a.residual_out, "residualOut"},
              {a.norm_out, "normOut"},
              {a.gamma, "gamma"}};
  for (const auto& q : ptrs)
    if (!q.p) return fail(tpcommInvalidArgument, "%s: %s is NULL", kOp, q.name);
  const tpcommRmsNormParams_t* p = a.params;
  if (!p)
    return fail(tpcommInvalidArgument,
                "%s: params is NULL (start from "
                "TPCOMM_RMSNORM_PARAMS_INITIALIZER)",
                kOp);
  if (p->version != TPCOMM_RMSNORM_PARAMS_VERSION)
    return fail(tpcommInvalidArgument,
                "%s: params->version is %u, this library knows %u (start "
                "from TPCOMM_RMSNORM_PARAMS_INITIALIZER)",
                kOp, p->version, TPCOMM_RMSNORM_PARAMS_VERSION);
  if (!(p->eps > 0.f) || !std::isfinite(p->eps))
    return fail(tpcommInvalidArgument, "%s: params->eps is %g; it must be finite and > 0", kOp,
                static_cast<double>(p->eps));
  if (p->weightOffset != 0 && p->weightOffset != 1)
    return fail(tpcommInvalidArgument, "%s: params->weightOffset is %d (0: gamma, 1: 1 + gamma)",
                kOp, p->weightOffset);
  size_t n = 0;
  TPCOMM_CHECK(fusedPayloadBytes(kOp, a.tokens, a.hidden, a.datatype, &n));
  const size_t es = elementBytes(a.datatype);
  if (p->quantScale && (cc_major < 8 || (cc_major == 8 && cc_minor < 9)))
    return fail(tpcommUnsupported,
                "%s: FP8 e4m3 output (params->quantScale) needs compute "
                "capability 8.9 or newer; this GPU is %d.%d",
                kOp, cc_major, cc_minor);
  for (const auto& q : ptrs)
    if (reinterpret_cast<uintptr_t>(q.p) % es != 0 && q.p != a.norm_out)
      return fail(tpcommInvalidArgument, "%s: %s %p is not aligned to the %zu-byte element size",
                  kOp, q.name, q.p, es);
  if (!p->quantScale && reinterpret_cast<uintptr_t>(a.norm_out) % es != 0)
    return fail(tpcommInvalidArgument,
                "%s: normOut %p is not aligned to the %zu-byte element "
                "size",
                kOp, a.norm_out, es);
  const size_t nq = p->quantScale ? a.tokens * a.hidden : n;
  TPCOMM_CHECK(sameOrApart(a.residual_in, "residualIn", a.residual_out, "residualOut", n));
  if (!p->quantScale)
    TPCOMM_CHECK(sameOrApart(a.input, "input", a.norm_out, "normOut", n));
  else
    TPCOMM_CHECK(apart(a.input, "input", n, a.norm_out, "normOut", nq));
  TPCOMM_CHECK(apart(a.norm_out, "normOut", nq, a.residual_out, "residualOut", n));
  TPCOMM_CHECK(apart(a.norm_out, "normOut", nq, a.residual_in, "residualIn", n));
  TPCOMM_CHECK(apart(a.residual_out, "residualOut", n, a.input, "input", n));
  TPCOMM_CHECK(apart(a.gamma, "gamma", a.hidden * es, a.residual_out, "residualOut", n));
  TPCOMM_CHECK(apart(a.gamma, "gamma", a.hidden * es, a.norm_out, "normOut", nq));
  *bytes = n;
  return tpcommSuccess;
}

}  // namespace tpcomm
