#include "comm/checks/buffer_check.h"

#include "comm/checks/stream_device.h"
#include "common/error.h"

namespace tpcomm {

tpcommResult_t judgeBuffer(const cudaPointerAttributes& a, const BufferArg& b, int device, int rank,
                           const char* op) {
  switch (a.type) {
    case cudaMemoryTypeDevice:
      if (a.device == device) return tpcommSuccess;
      return fail(tpcommInvalidArgument,
                  "%s: %s %p is memory of GPU %d, but rank %d's communicator is on GPU %d (pass "
                  "memory of GPU %d; another GPU's would be read over the link)",
                  op, b.name, b.ptr, a.device, rank, device, device);
    case cudaMemoryTypeManaged:
      return tpcommSuccess;
    case cudaMemoryTypeHost:
      if (a.devicePointer == b.ptr) return tpcommSuccess;
      return fail(tpcommInvalidArgument,
                  "%s: %s %p is pinned host memory that GPU %d %s (allocate it with "
                  "cudaHostAllocPortable, or register it with cudaHostRegisterPortable)",
                  op, b.name, b.ptr, device,
                  a.devicePointer ? "sees at another address" : "cannot address");
    default:
      return fail(tpcommInvalidArgument,
                  "%s: %s %p is not memory CUDA knows: pageable host memory (malloc, new, the "
                  "stack), freed memory, or no allocation; pass memory of GPU %d, or pin host "
                  "memory (cudaHostRegister)",
                  op, b.name, b.ptr, device);
  }
}

tpcommResult_t checkBuffers(CheckedPointers* seen, int device, int rank, const char* op,
                            bool capturing, std::initializer_list<BufferArg> bufs,
                            PointerQuery query) {
  for (const BufferArg& b : bufs) {
    if (!b.ptr || seen->contains(b.ptr)) continue;
    cudaPointerAttributes a{};
    cudaError_t e;
    {
      RelaxedCaptureMode relaxed(capturing);
      e = query(&a, b.ptr);
    }
    if (e == cudaErrorInvalidValue) {  // older drivers' answer for memory they do not know
      cudaGetLastError();
      a = cudaPointerAttributes{};
      a.type = cudaMemoryTypeUnregistered;
    } else if (e != cudaSuccess) {
      return failCuda(e, "cudaPointerGetAttributes", __FILE__, __LINE__);
    }
    TPCOMM_CHECK(judgeBuffer(a, b, device, rank, op));
    seen->add(b.ptr);
  }
  return tpcommSuccess;
}

}  // namespace tpcomm
