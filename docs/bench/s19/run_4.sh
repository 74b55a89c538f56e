#!/bin/bash
# Nineteenth round, device call 4 (one H200, all ranks sharing it): the fused pull tests with the
# flag wire as the default (fused_pull_ll off), the pull chains (their mixed chains now fuse over
# the flag wire), then the World/* matrix (tests-a) in the time left.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT
s() { echo "== $* ($(date +%T))"; }
s fused pull
timeout 120 $T --gtest_filter='FusedPull*' >$OUT/fused_pull.log 2>&1; echo "rc=$?"
grep -E '^\[ *(FAILED|PASSED|       OK) |Failure|fused    \]' $OUT/fused_pull.log | head -30
s pull chains
timeout 120 $T --gtest_filter='Chain/*pull*' >$OUT/chains_pull.log 2>&1; echo "rc=$?"
grep -cE '^\[       OK \]' $OUT/chains_pull.log; grep -E '^\[ *(FAILED|PASSED) ' $OUT/chains_pull.log | head
s world
TPCOMM_SUITE_SECONDS=290 TPCOMM_SUITE_PACK=1 tests/gpu/run_suite.sh $B $OUT/ta tests-a >/dev/null 2>&1
cat $OUT/ta/summary.txt
s done
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
