#include "comm/call/poison_outputs.h"

namespace tpcomm {

OutputSpan allReduceOutput(void* recv, size_t count, size_t elem_bytes) {
  return OutputSpan{recv, count * elem_bytes};
}

OutputSpan rsagOutput(tpcommColl_t coll, void* recv, size_t count, size_t elem_bytes, int world) {
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

}  // namespace tpcomm
