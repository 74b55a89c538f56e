#!/bin/bash
# Nineteenth round, device call 2 (one H200, all ranks sharing it): the fused call over the pull
# wires (fused_pull.cu) and the one rounding on every path. Its GPU tests, the fused and epilogue
# suites again (the rounding changed there), the fused pull against the pull all-reduce + epilogue
# pair (tpcomm-bench-fused, the all-reduce forced to oneshot_pull: LL entries up to 64 KiB, or a
# flag per block), the chains the first call's stage cut (world 8 on, host) and the pull chains
# with the new variants mixed in, then the Python GPU tests.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests; F=$B/bench/tpcomm-bench-fused
nvidia-smi -L; cat $B/COMMIT
s() { echo "== $* ($(date +%T))"; }
s tests
timeout 200 $T --gtest_filter='FusedPull*' >$OUT/fused_pull.log 2>&1; echo "rc=$?"
grep -E '^\[ *(FAILED|PASSED|SKIPPED) |tests? ran|fused    \]' $OUT/fused_pull.log | head -30
grep -E 'Failure|differ|want' $OUT/fused_pull.log | head -20
timeout 150 $T --gtest_filter='Fused.*:AddRmsNorm*:Poison*' >$OUT/fused.log 2>&1; echo "rc=$?"
grep -E '^\[ *(FAILED|PASSED|SKIPPED) |tests? ran' $OUT/fused.log | head -20
s bench
for h in 7168 4096; do
  for k in pull_ll_bytes=65536 pull_ll_bytes=0; do
    echo "-- H=$h $k"
    TPCOMM_ALGO=oneshot_pull TPCOMM_KNOBS=$k timeout 40 $F --ranks 2 --hidden $h --tokens 1,2,4,8,16 2>&1 | tail -7
  done
done >$OUT/bench_fused_pull.txt 2>&1
for w in 4 8; do
  echo "-- world $w H=7168 pull_ll_bytes=65536"
  TPCOMM_ALGO=oneshot_pull TPCOMM_KNOBS=pull_ll_bytes=65536 timeout 40 $F --ranks $w --tokens 1,4,16 2>&1 | tail -5
done >>$OUT/bench_fused_pull.txt 2>&1
echo "-- FP8 world 2 H=7168 pull_ll_bytes=65536" >>$OUT/bench_fused_pull.txt
TPCOMM_ALGO=oneshot_pull TPCOMM_KNOBS=pull_ll_bytes=65536 timeout 40 $F --ranks 2 --fp8 --tokens 1,4,16 >>$OUT/bench_fused_pull.txt 2>&1
echo "-- push default (control)" >>$OUT/bench_fused_pull.txt
timeout 40 $F --ranks 2 --tokens 1,4,16 >>$OUT/bench_fused_pull.txt 2>&1
cat $OUT/bench_fused_pull.txt
s chains
timeout 150 $T --gtest_filter='Chain/*w8_*:Chain/*pull*' >$OUT/chains.log 2>&1; echo "rc=$?"
grep -cE '^\[       OK \]' $OUT/chains.log; grep -E '^\[ *(FAILED|PASSED) |tests? ran|^\[ RUN' $OUT/chains.log | tail -4
s done
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
