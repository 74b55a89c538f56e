#include "comm/call/poison_outputs.h"

#include <string>

#include "comm/call/call_common.h"
#include "comm/call/stream_order.h"
#include "common/error.h"

namespace tpcomm {

OutputSpan allReduceOutput(void* recv, size_t count, size_t elem_bytes) {
  return OutputSpan{recv, count * elem_bytes};
}

OutputSpan halfOutput(tpcommColl_t coll, void* recv, size_t count, size_t elem_bytes, int world) {
  const size_t runs = coll == tpcommCollAllGather ? static_cast<size_t>(world) : 1;
  return OutputSpan{recv, runs * count * elem_bytes};
}

FusedOutputs fusedOutputs(void* residual_out, void* norm_out, size_t tokens, size_t hidden,
                          size_t elem_bytes, bool fp8) {
  const size_t n = tokens * hidden;
  return FusedOutputs{OutputSpan{residual_out, n * elem_bytes},
                      OutputSpan{norm_out, n * (fp8 ? 1 : elem_bytes)}};
}

bool fillPoison(std::initializer_list<OutputSpan> outs, cudaStream_t s) {
  bool filled = true;
  for (const OutputSpan& o : outs)
    if (o.bytes) filled = cudaMemsetAsync(o.ptr, kPoisonByte, o.bytes, s) == cudaSuccess && filled;
  return filled;
}

tpcommResult_t refuseIfBroken(tpcommComm* c, const char* op, cudaStream_t s,
                              cudaStreamCaptureStatus cap, std::initializer_list<OutputSpan> outs) {
  const tpcommResult_t broken = checkAsync(c, op);
  if (broken == tpcommSuccess) return tpcommSuccess;
  const std::string why = lastError();
  // Behind the communicator's earlier calls, whose kernels may still be writing these outputs.
  if (orderCall(&c->order, s, cap, op, c->rank) == tpcommSuccess) {
    if (!fillPoison(outs, s)) cudaGetLastError();  // reported below as the communicator's error
    (void)afterCall(&c->order, s, cap);
  }
  setLastError(why);
  return broken;
}

}  // namespace tpcomm
