#!/bin/bash
# Twenty-sixth round, device call 6 (one H200, all ranks sharing it), on the round's last library
# change (1439f13: the policy's reason wording, the host tables): the suites that exercise the
# planner's choices around the host path and failure handling (graphs, failures, stats, deadlines,
# the halves, mismatched and interleaved calls, stream capture), within what device time is left.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rm -rf gpu-carry/pack && tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
cat $B/COMMIT
echo "== suites ($(date +%T))"
timeout 230 $T --gtest_filter='Graph.*:Failure.*:Stats.*:Deadline.*:HalfCollectives*:Algo/*:StreamsCapture.*' \
  >$OUT/suites.log 2>&1
echo "suites rc=$?"; grep -E '^\[ *(FAILED|PASSED) |FAILED  \]|tests? from .* ran' $OUT/suites.log | tail -20
grep -m3 -A10 'Failure$' $OUT/suites.log | head -40
echo "== done ($(date +%T))"
