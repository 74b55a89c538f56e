// tpcomm-floor's measurements (tpcomm_floor.cu prints them): each returns the machine's number
// for one floor, or -1 where the machine cannot measure it. Pure CUDA, no tpcomm library.
#pragma once

#include <cuda_runtime.h>

#include "bench/cuda_check.h"

#define CK(call) TPCOMM_TOOL_CHECK("tpcomm-floor", call)

namespace floor_probe {

constexpr int kChain = 100;  // kernels per graph
constexpr int kReps = 15;

__device__ __forceinline__ void waitPrimary() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void triggerDependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The communicator's words a call loads: its epoch and abort flag.
struct State {
  unsigned long long epoch;
  unsigned abort;
};

// us per kernel in a graph of kChain on device `dev`, by mode (floor_kernel.cu):
// 0 empty, 1 PDL wait, 2 + 1 KiB load/store, 3 + epoch/abort loads, 4 mode 2 + 1 KiB to `remote`.
double chainUs(int dev, int mode, uint4* remote);
// One-way latency in us between devices 0 and 1, flags in peer or pinned host memory.
double oneWayUs(bool host);

// A minimal one-shot all-reduce between two GPUs (by default 1 KiB: one block of 64 threads;
// fp32 zeros, a vector per thread, sentinel arrival as the library's SentinelProto), to see what
// each piece of the real kernel costs against the floor rows above. Variants (bits of `how`):
//   kSlotBaked: the slot comes from the launch argument (node i of the graph uses slot i % 4)
//               instead of an epoch word in device memory (read at entry, advanced at the end);
//               grids of more than one block always bake it (no arrival counter here);
//   kTriggerEarly: griddepcontrol.launch_dependents at entry instead of after the push;
//   kFreshInput: the input is a buffer no kernel writes (not the previous call's output);
//   kAbortLoad: a volatile load of the abort word just before the epoch's (as the library);
//   kTimerFirst: %globaltimer (the wait deadline) read before the push instead of after it;
//   kOnlyBlock0: blocks other than 0 exit at once (what a grid's size costs without its data);
//   kPollPause: 64 ns of __nanosleep between missed polls (what the polls' own traffic costs).
constexpr int kSlotBaked = 1, kTriggerEarly = 2, kFreshInput = 4, kAbortLoad = 8, kTimerFirst = 16,
              kOnlyBlock0 = 32, kPollPause = 64;
constexpr int kMiniSlots = 4, kMiniVecs = 64;
// us per call of the minimal one-shot (floor_mini_oneshot.cu) on `blocks` x `threads`.
double miniOneShotUs(int how, int blocks = 1, int threads = kMiniVecs);

// How a bandwidth measurement moves its 64 MiB per GPU: SM loads/stores (writers4 as in
// hostStream) or the copy engines (cudaMemcpyAsync device -> pinned host, host -> device, or both
// directions at once on two streams: 128 MiB moved).
struct HostTraffic {
  bool copy_engine;
  int writers4;   // SMs: 0..4 (hostStream)
  bool d2h, h2d;  // copy engines
};

// GB/s per GPU (the slowest GPU's; both directions counted), every GPU moving 64 MiB at once.
double hostBandwidthGBs(int ngpu, const HostTraffic& how);

}  // namespace floor_probe
