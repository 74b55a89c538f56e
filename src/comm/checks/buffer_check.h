// Where a call's buffers live, checked before anything is launched: a kernel given pageable host
// memory faults and takes the CUDA context with it, and memory of another GPU would be read and
// written silently over peer access. What CUDA says of a pointer (cudaPointerGetAttributes) is
// asked once and remembered per communicator, so a call whose buffers repeat pays a compare per
// pointer.
//
// Accepted: device memory of the communicator's GPU; pinned host memory (cudaHostAlloc,
// cudaHostRegister) mapped for that GPU at the same address (it works, at the speed of the link);
// managed memory (pages migrate on first touch). Refused (tpcommInvalidArgument): host memory
// CUDA does not know (malloc, new, the stack, or freed memory), memory of another GPU, and pinned
// memory not mapped for this GPU. Pageable memory is refused also where the GPU could page it in
// (HMM, Grace's ATS): every call would run through page faults, and the answer must not depend
// on the machine; cudaHostRegister makes it pinned host memory, which is accepted.
//
// A remembered pointer is not asked again: if its allocation is freed and the address comes back
// as a different kind of memory (pageable, or another GPU's) before the next call, that call goes
// unchecked and behaves as it would without the check. Asking every call would cost a driver
// lookup per pointer on the eager hot path; engines' caching allocators keep their blocks, so the
// case needs memory given back to CUDA while its address is still passed.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

struct BufferArg {
  const void* ptr;  // nullptr: not passed (an optional argument), skipped
  const char* name;
};

// Accepted pointers of one communicator: a direct-mapped table, so a lookup is one compare.
class CheckedPointers {
 public:
  static constexpr int kSlots = 64;
  bool contains(const void* p) const { return slot_[indexOf(p)] == key(p); }
  void add(const void* p) { slot_[indexOf(p)] = key(p); }

 private:
  static uintptr_t key(const void* p) { return reinterpret_cast<uintptr_t>(p); }
  static unsigned indexOf(const void* p) {
    // Fibonacci hashing: allocations sit on large power-of-two boundaries, the low bits say little.
    return static_cast<unsigned>((key(p) * 0x9E3779B97F4A7C15ull) >> 58);
  }
  uintptr_t slot_[kSlots] = {};  // 0: empty (a NULL buffer is never checked)
};

// The verdict on one buffer from what CUDA says of it (no GPU needed: unit-tested).
tpcommResult_t judgeBuffer(const cudaPointerAttributes& a, const BufferArg& b, int device, int rank,
                           const char* op);

using PointerQuery = cudaError_t (*)(cudaPointerAttributes*, const void*);

// Every buffer of one call; asks `query` only for pointers not in `seen`, and remembers the ones
// it accepts (a refusal is asked again next time, so its message is always current).
tpcommResult_t checkBuffers(CheckedPointers* seen, int device, int rank, const char* op,
                            bool capturing, std::initializer_list<BufferArg> bufs,
                            PointerQuery query = cudaPointerGetAttributes);

}  // namespace tpcomm
