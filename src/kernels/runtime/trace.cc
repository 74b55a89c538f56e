#include "kernels/runtime/trace.h"

#include <vector>

namespace tpcomm {

// A call's row is in the ring of the kernel that ran it; the same index of the other rings holds
// an older call, or zeros. So the row with the latest entry stamp wins.
bool readKernelTrace(int dev, unsigned long long* out) {
  using Reader = bool (*)(int, unsigned long long*);
  const Reader others[] = {readLeanOneShotTrace, readFusedTrace, readFusedClusterTrace};
  if (!readOneShotTrace(dev, out)) return false;
  std::vector<unsigned long long> ring(static_cast<size_t>(kTraceRanks) * kTraceCalls *
                                       kTracePoints);
  for (Reader read : others) {
    if (!read(dev, ring.data())) return false;
    for (size_t i = 0; i < static_cast<size_t>(kTraceRanks) * kTraceCalls; ++i) {
      unsigned long long* row = out + i * kTracePoints;
      const unsigned long long* other = ring.data() + i * kTracePoints;
      if (other[kTraceEntry] > row[kTraceEntry])
        for (int p = 0; p < kTracePoints; ++p) row[p] = other[p];
    }
  }
  return true;
}

}  // namespace tpcomm
