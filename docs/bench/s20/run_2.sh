#!/bin/bash
# Twentieth round, device call 2 (one H200, all ranks sharing it): the late-rank chains of every
# pull algorithm mixed with fused calls, at the default knobs (fused calls of 64+ rows, 128+ at
# two ranks, take the fused two-shot) and with every fused pull call on the two-shot
# (fused_twoshot_rows=1); the fused pull tests at the new default; synccheck; the Python GPU tests.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT
s() { echo "== $* ($(date +%T))"; }
g() { # name timeout filter
  local n=$1 to=$2; shift 2
  timeout $to $T --gtest_filter="$1" >$OUT/$n.log 2>&1; echo "$n rc=$?"
  grep -cE '^\[       OK \]' $OUT/$n.log
  grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |Failure|Which is' $OUT/$n.log | head -20
}
s chains default knobs
g chains_pull_default 200 'Chain/*pull_mixed*'
s chains, every fused pull call on the two-shot
TPCOMM_KNOBS=fused_twoshot_rows=1 g chains_pull_twoshot 200 'Chain/*pull_mixed*'
s fused pull tests
g fused_pull 150 'FusedPull.*:FusedTwoShotPull.*'
s synccheck
TPCOMM_TEST_TIMEOUT_SCALE=10 timeout 100 compute-sanitizer --tool synccheck --error-exitcode 9 \
  --report-api-errors no $T --gtest_filter='FusedTwoShotPull.World2OneStepAndManySteps' >$OUT/san_synccheck.log 2>&1
echo "synccheck rc=$?"; grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' $OUT/san_synccheck.log | head -3
s python
TPCOMM_LIBRARY=$B/src/libtpcomm.so TPCOMM_CLI=$B/tools/tpcomm PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
  timeout 150 python3 -m pytest python/tests -q -m gpu -rA -p no:cacheprovider >$OUT/pytest_gpu.log 2>&1
echo "pytest rc=$?"; grep -E "passed|failed|error|FAILED" $OUT/pytest_gpu.log | tail -8
s done
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
