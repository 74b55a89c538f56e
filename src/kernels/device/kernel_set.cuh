// The table of kernel entry points of one algorithm: one instantiation per datatype for each
// world-size class (kernels keep per-peer registers sized for 2, 4 or 8 ranks). `Entry` names the
// kernel template: a struct with `template <typename Proto, typename T, int kW> static const
// void* get()`, which TPCOMM_KERNEL_ENTRY writes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "kernels/fused_oneshot.h"
#include "kernels/layout/island_world.h"
#include "kernels/runtime/algo_launch.h"

// Defines `struct Entry` whose get<Proto, T, kW>() is the address of the kernel instantiation the
// other arguments name (they may use Proto, T and kW; the island tables' kW is the island-size
// class). A template header before it gives the entry parameters of its own:
//   template <bool kScatter>
//   TPCOMM_KERNEL_ENTRY(Rsag, rsagKernel<Proto, T, kW, kScatter>);
// A macro: a kernel template's address cannot be a template argument.
#define TPCOMM_KERNEL_ENTRY(Entry, ...)                                                         \
  struct Entry {                                                                                \
    template <typename Proto, typename T, int kW>                                               \
    static const void* get() {                                                                  \
      static_assert(::tpcomm::kLaunchedSignature<T, decltype(&__VA_ARGS__)>,                    \
                    "a kernel's parameters must be those its launcher packs (kernel_set.cuh)"); \
      return reinterpret_cast<const void*>(&__VA_ARGS__);                                       \
    }                                                                                           \
  }

// The all-reduce family's kernel parameters (AllReduceKernelFn below), named as its kernels use
// them: the communicator, the launch's plan, the call's buffers and count (elements), and the
// most vectors a step takes (the chunked kernels; 0: the layout's whole slot).
#define TPCOMM_ALL_REDUCE_PARAMS(T)                                                            \
  const __grid_constant__ DeviceComm c, const __grid_constant__ LaunchParams l, const T *send, \
      T *recv, size_t count, size_t chunk_vecs

namespace tpcomm {

// The two parameter lists the launchers pack: the all-reduce family's (launchAllReduceKernel and
// the copy-engine steps, launch.cu and ce_copies.cc) and the fused call's (launchFusedOneShot,
// fused_oneshot.cu). cudaLaunchKernelExC takes the arguments as untyped pointers, so a kernel
// whose parameters differ would read garbage; TPCOMM_KERNEL_ENTRY refuses it at compile time.
template <typename T>
using AllReduceKernelFn = void (*)(DeviceComm, LaunchParams, const T*, T*, size_t, size_t);
using FusedKernelFn = void (*)(DeviceComm, FusedParams);
template <typename T, typename Fn>
constexpr bool kLaunchedSignature =
    std::is_same_v<Fn, AllReduceKernelFn<T>> || std::is_same_v<Fn, FusedKernelFn>;

template <typename Entry, typename Proto, int kW>
KernelSet kernelSetFor() {
  return KernelSet{{Entry::template get<Proto, float, kW>(),
                    Entry::template get<Proto, __half, kW>(),
                    Entry::template get<Proto, __nv_bfloat16, kW>()}};
}

template <typename Entry, typename Proto>
KernelSet kernelSetByWorld(int world) {
  return world <= 2   ? kernelSetFor<Entry, Proto, 2>()
         : world <= 4 ? kernelSetFor<Entry, Proto, 4>()
                      : kernelSetFor<Entry, Proto, 8>();
}

// The island kernels' table (island.cu, island_pull.cu): built per island-size class (2, 4),
// for the worlds islandWorld serves; all zero elsewhere.
template <typename Entry, typename Proto>
KernelSet kernelSetByIsland(int world) {
  if (!islandWorld(world)) return KernelSet{};
  return world / 2 <= 2 ? kernelSetFor<Entry, Proto, 2>() : kernelSetFor<Entry, Proto, 4>();
}

}  // namespace tpcomm
