#!/bin/bash
# Twentieth round, device call 1 (one H200, all ranks sharing it): the fused two-shot over pull
# (fused_twoshot_pull.cu) against the host reference, in every path's bits, under a dead peer
# (poison), in the late-rank chains of the pull algorithms (fused calls of 64+ rows take it), under
# memcheck and racecheck; then its timings against the fused pull one-shot and the unfused pull
# pair at worlds 2, 4, 8 (the planner's fused_twoshot_rows default comes from these).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests; F=$B/bench/tpcomm-bench-fused
nvidia-smi -L; cat $B/COMMIT
s() { echo "== $* ($(date +%T))"; }
g() { # name timeout filter
  local n=$1 to=$2; shift 2
  timeout $to $T --gtest_filter="$1" >$OUT/$n.log 2>&1; echo "$n rc=$?"
  grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |Failure|Which is|world=' $OUT/$n.log | head -40
}
s tests
g twoshot 200 'FusedTwoShotPull.*'
g every_path 90 'FusedPull.EveryPathGivesTheSameBits'
g poison 150 'Poison.FusedAddRmsNorm:Poison.FailingCallInAGraph'
g fused_rest 150 'FusedPull.*:Fused*.*:AddRmsNorm*.*-FusedTwoShotPull.*:FusedPull.EveryPath*'
s chains
g chains_pull 240 'Chain/*Pull*'
s bench
for w in 2 4 8; do
  for a in oneshot_pull twoshot_pull; do
    for k in 0 1; do
      echo "-- world $w H=7168 algo=$a fused_twoshot_rows=$k"
      TPCOMM_ALGO=$a TPCOMM_KNOBS=pull_ll_bytes=0,fused_twoshot_rows=$k timeout 60 $F --ranks $w \
        --tokens 16,32,64,128,256,512,1024 2>&1 | tail -9
    done
  done
done >$OUT/bench_twoshot.txt 2>&1
cat $OUT/bench_twoshot.txt
s sanitizers
for tool in memcheck racecheck; do
  TPCOMM_TEST_TIMEOUT_SCALE=10 timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 \
    --report-api-errors no $T --gtest_filter='FusedTwoShotPull.World2OneStepAndManySteps' >$OUT/san_$tool.log 2>&1
  echo "$tool rc=$?"; grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' $OUT/san_$tool.log | head -3
done
s done
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
