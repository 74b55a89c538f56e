// Host side of the kernel timeline trace (trace_device.cuh): only in TPCOMM_KERNEL_TRACE builds.
#pragma once

#include <cstddef>

namespace tpcomm {

constexpr int kTraceCalls = 4096;  // ring of the last calls, indexed by step epoch
constexpr int kTraceRanks = 8;     // a ring per rank (ranks sharing a GPU share its rings)
// The points a one-shot call marks, in order (the fused kernels: `reduced` once their first row
// is summed with the residual, `end` after its norm and the close).
enum TracePoint : int {
  kTraceEntry,    // kernel entry, before griddepcontrol.wait
  kTraceWaited,   // past griddepcontrol.wait (the previous kernel is complete)
  kTraceEpoch,    // epoch known (input loads in flight with it)
  kTracePushed,   // the call's first-step pushes issued
  kTraceReduced,  // first step reduced and written (the peers' data had arrived)
  kTraceEnd,      // just before exit
  // The fused kernels only (0 elsewhere), between `reduced` and `end`:
  kTraceRowSum,      // the row's sum of squares known (block, and cluster, sums)
  kTraceNormStored,  // the row's norm stored (before the close)
  kTracePoints
};

// Copies device `dev`'s rings (kTraceRanks x kTraceCalls x kTracePoints nanosecond stamps) into
// out: for each rank and call, the stamps of whichever traced kernel ran it. False in builds
// without TPCOMM_KERNEL_TRACE.
bool readKernelTrace(int dev, unsigned long long* out);

// The rings of the files with traced kernels, which readKernelTrace merges.
bool readOneShotTrace(int dev, unsigned long long* out);       // oneshot.cu
bool readLeanOneShotTrace(int dev, unsigned long long* out);   // oneshot_lean.cu
bool readFusedTrace(int dev, unsigned long long* out);         // fused_oneshot.cu
bool readFusedClusterTrace(int dev, unsigned long long* out);  // fused_cluster.cu

}  // namespace tpcomm
