// A stream-ordered byte comparison, so long call sequences are checked without host syncs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace tpcomm::test {

// *mismatches += number of 4-byte words (and tail bytes) where a and b differ.
void launchCompare(const void* a, const void* b, size_t bytes, unsigned long long* mismatches,
                   cudaStream_t stream);

}  // namespace tpcomm::test
