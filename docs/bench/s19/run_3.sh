#!/bin/bash
# Nineteenth round, device call 3 (one H200, all ranks sharing it): every path's bits (fixed
# test: the unfused pairs over the copy engines and host LL), both pull wires of the fused call
# against the pull pair at worlds 2, 4, 8 (the fused wire's policy comes from this), the sanitizers
# on the fused pull kernels, the host chains, the Python GPU tests and doctor.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests; F=$B/bench/tpcomm-bench-fused
nvidia-smi -L; cat $B/COMMIT
s() { echo "== $* ($(date +%T))"; }
s every path
timeout 60 $T --gtest_filter='FusedPull.EveryPathGivesTheSameBits' >$OUT/every_path.log 2>&1; echo "rc=$?"
grep -E '^\[ *(FAILED|PASSED|       OK) |Failure|Which is|world' $OUT/every_path.log | head -30
s wires
for w in 2 4 8; do
  for k in pull_ll_bytes=65536 pull_ll_bytes=0; do
    echo "-- world $w H=7168 $k"
    TPCOMM_ALGO=oneshot_pull TPCOMM_KNOBS=$k timeout 40 $F --ranks $w --tokens 1,2,4,8,16 2>&1 | tail -6
  done
done >$OUT/wires.txt 2>&1
cat $OUT/wires.txt
s sanitizers
for tool in memcheck racecheck; do
  TPCOMM_TEST_TIMEOUT_SCALE=10 timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 \
    --report-api-errors no $T --gtest_filter='FusedPull.EveryPathGivesTheSameBits' >$OUT/san_$tool.log 2>&1
  echo "$tool rc=$?"; grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' $OUT/san_$tool.log | head -3
done
s host chains
TPCOMM_TRANSPORT=host timeout 100 $T --gtest_filter='Chain/*auto*' >$OUT/chains_host.log 2>&1; echo "rc=$?"
grep -cE '^\[       OK \]' $OUT/chains_host.log; grep -E '^\[ *(FAILED|PASSED) ' $OUT/chains_host.log | head
s python
TPCOMM_LIBRARY=$B/src/libtpcomm.so TPCOMM_CLI=$B/tools/tpcomm PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
  timeout 200 python3 -m pytest python/tests -q -m gpu -rA -p no:cacheprovider >$OUT/pytest_gpu.log 2>&1
echo "pytest rc=$?"; grep -E "passed|failed|error|FAILED|SKIPPED" $OUT/pytest_gpu.log | tail -25
timeout 30 $B/tools/tpcomm doctor >$OUT/doctor.txt 2>&1; echo "doctor rc=$?"
s done
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
