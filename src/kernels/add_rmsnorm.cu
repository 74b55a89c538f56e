// The residual add + RMSNorm (+ FP8) epilogue as a kernel of its own (add_rmsnorm.h): one block
// per row (its cluster-per-row form lost to it and is gone: docs/BENCHMARKS.md, "Launch knobs",
// epilogue_cluster). Two passes over the row by the same threads:
// the first rounds residual_out to T, stores it and sums its squares; the second reads back the
// thread's own stores (no barrier needed) and writes the norm. Re-reading the slice from L1/L2
// costs less than holding any hidden size in registers, and keeps one code path for every H.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "common/error.h"
#include "kernels/add_rmsnorm.h"
#include "kernels/device/rmsnorm_device.cuh"
#include "kernels/device/vec_device.cuh"
#include "kernels/runtime/algo_launch.h"
#include "kernels/runtime/variant_table.h"

namespace tpcomm {
namespace {

constexpr int kMaxThreads = 512;
constexpr int kMaxGrid = 4096;  // rows beyond it are taken by a grid-stride loop

// Writes the E e4m3 bytes of one vector's norms; one store where the bytes are aligned for it.
template <int E>
__device__ __forceinline__ void storeE4m3(uint8_t* out, size_t first, size_t count,
                                          const uint8_t (&b)[E]) {
  if (first + E <= count && reinterpret_cast<uintptr_t>(out + first) % E == 0) {
    uint64_t packed = 0;
#pragma unroll
    for (int i = 0; i < E; ++i) packed |= static_cast<uint64_t>(b[i]) << (8 * i);
    if constexpr (E == 8)
      *reinterpret_cast<uint64_t*>(out + first) = packed;
    else
      *reinterpret_cast<uint32_t*>(out + first) = static_cast<uint32_t>(packed);
    return;
  }
#pragma unroll
  for (int i = 0; i < E; ++i)
    if (first + i < count) out[first + i] = b[i];
}

// Block b takes rows b, b + grid, ...
template <typename T, bool kQuant>
__global__ void __launch_bounds__(kMaxThreads) addRmsNormKernel(AddRmsNormArgs a, bool aligned) {
  constexpr int E = VecTraits<T>::kElems;
  __shared__ BlockSumScratch scratch;
  const size_t H = a.hidden;
  const size_t nvec = (H + E - 1) / E;
  const float inv_scale = kQuant ? 1.f / *a.quant_scale : 0.f;
  unsigned parity = 0;
  for (size_t row = blockIdx.x; row < a.rows; row += gridDim.x, parity ^= 1u) {
    const size_t off = row * H;
    const T* ar = static_cast<const T*>(a.ar) + off;
    const T* res_in = static_cast<const T*>(a.residual_in) + off;
    T* res_out = static_cast<T*>(a.residual_out) + off;

    float sumsq = 0.f;
    for (size_t v = threadIdx.x; v < nvec; v += blockDim.x) {
      const uint4 x = loadVec(ar, v, H, aligned);
      const uint4 r = loadVec(res_in, v, H, aligned);
      uint4 y = make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int i = 0; i < E; ++i) {
        const uint32_t bits =
            floatToBits<T>(bitsToFloat<T>(laneBits<T>(x, i)) + bitsToFloat<T>(laneBits<T>(r, i)));
        setLaneBits<T>(y, i, bits);
        const float q = bitsToFloat<T>(bits);
        if (v * E + i < H) sumsq += q * q;
      }
      storeVec(res_out, v, H, aligned, y);
    }
    bool unused = false;  // the epilogue kernel never gives up
    const float rs = rsqrtf(
        blockSumFixedOrder(sumsq, scratch, parity, false, &unused) / static_cast<float>(H) + a.eps);

    for (size_t v = threadIdx.x; v < nvec; v += blockDim.x) {
      const uint4 y = loadVec(static_cast<const T*>(res_out), v, H, aligned);
      const uint4 g = loadVec(static_cast<const T*>(a.gamma), v, H, aligned);
      if constexpr (kQuant) {
        uint8_t b[E];
#pragma unroll
        for (int i = 0; i < E; ++i)
          b[i] = normE4m3<T>(bitsToFloat<T>(laneBits<T>(y, i)) * rs *
                                 normWeight<T>(laneBits<T>(g, i), a.weight_offset),
                             inv_scale);
        storeE4m3<E>(static_cast<uint8_t*>(a.norm_out) + off, v * E, H, b);
      } else {
        uint4 n = make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int i = 0; i < E; ++i)
          setLaneBits<T>(n, i,
                         floatToBits<T>(bitsToFloat<T>(laneBits<T>(y, i)) * rs *
                                        normWeight<T>(laneBits<T>(g, i), a.weight_offset)));
        storeVec(static_cast<T*>(a.norm_out) + off, v, H, aligned, n);
      }
    }
  }
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % kVecBytes == 0;
}

// What launchAddRmsNorm packs. cudaLaunchKernelExC takes the arguments as untyped pointers, so a
// kernel whose parameters differ would read garbage; entryOf refuses it at compile time (as
// TPCOMM_KERNEL_ENTRY does for the variant kernels, kernel_set.cuh).
using AddRmsNormKernelFn = void (*)(AddRmsNormArgs, bool);

template <typename T, bool kQuant>
const void* entryOf() {
  static_assert(std::is_same_v<decltype(&addRmsNormKernel<T, kQuant>), AddRmsNormKernelFn>,
                "addRmsNormKernel's parameters must be those launchAddRmsNorm packs");
  return reinterpret_cast<const void*>(&addRmsNormKernel<T, kQuant>);
}

template <bool kQuant>
void setOf(const void* (&fn)[kNumDtypes]) {
  fn[0] = entryOf<float, kQuant>();
  fn[1] = entryOf<__half, kQuant>();
  fn[2] = entryOf<__nv_bfloat16, kQuant>();
}

}  // namespace

KernelSet addRmsNormKernels(int) {
  KernelSet s{};
  setOf<false>(s.fn);
  return s;
}
KernelSet addRmsNormFp8Kernels(int) {
  KernelSet s{};
  setOf<true>(s.fn);
  return s;
}

AddRmsNormGrid addRmsNormGrid(size_t rows, size_t hidden, size_t elem_bytes, int max_blocks) {
  AddRmsNormGrid g;
  const size_t nvec = (hidden * elem_bytes + kVecBytes - 1) / kVecBytes;
  g.threads = static_cast<int>(std::min<size_t>(kMaxThreads, (nvec + 31) / 32 * 32));
  const size_t cap = static_cast<size_t>(max_blocks > 0 ? max_blocks : kMaxGrid);
  g.blocks = static_cast<int>(std::max<size_t>(1, std::min(rows, cap)));
  return g;
}

tpcommResult_t launchAddRmsNorm(const AddRmsNormArgs& a, const AddRmsNormLaunch& l,
                                cudaStream_t s) {
  const AddRmsNormGrid& g = l.grid;
  if (a.rows == 0 || a.hidden == 0) return tpcommSuccess;
  const size_t esize = dtypeSize(a.dtype);
  // Whole rows of 16-byte vectors in 16-byte aligned buffers take one load per vector; anything
  // else goes element by element (loadVec / storeVec).
  const bool aligned = (a.hidden * esize) % kVecBytes == 0 && aligned16(a.ar) &&
                       aligned16(a.residual_in) && aligned16(a.residual_out) &&
                       aligned16(a.gamma) && (a.quant_scale != nullptr || aligned16(a.norm_out));
  const void* fn = variantKernel(l.variant, 2, dtypeIndex(a.dtype));
  if (!fn)
    return fail(tpcommInternalError, "add+RMSNorm launch: no kernel for variant %d, datatype %d",
                static_cast<int>(l.variant), static_cast<int>(a.dtype));
  AddRmsNormArgs args = a;
  bool al = aligned;
  void* params[] = {&args, &al};
  return launchKernel(fn, g.blocks, g.threads, false, params, s);
}

}  // namespace tpcomm
