#!/bin/bash
# Twenty-first round, device call 2 (one H200, all ranks sharing it): the fused two-shot's push
# form (fused_twoshot_push.cu; forced on one GPU by fused_twoshot_push=1) against the host
# reference, in every path's bits, under a dead peer, in graphs, in the late-rank chains of the
# push one-shot and two-shot (every fused call takes it: fused_twoshot_rows=1), under memcheck;
# then its timings against the pull form and the unfused pair at worlds 2, 4, 8. Also: the pull
# forms after the shared-helper refactor, and the NCCL watchdog / a dead machine (a failed NCCL
# launch across machines now aborts the link instead of leaving its kernel on the stream).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests; F=$B/bench/tpcomm-bench-fused
nvidia-smi -L; cat $B/COMMIT
s() { echo "== $* ($(date +%T))"; }
g() { # name timeout filter
  local n=$1 to=$2; shift 2
  timeout $to $T --gtest_filter="$1" >$OUT/$n.log 2>&1; echo "$n rc=$?"
  grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |Failure|Which is|world=|error' $OUT/$n.log | head -40
}
s tests
g push 200 'FusedTwoShotPush.*:FusedPull.EveryPathGivesTheSameBits:FusedTwoShotPull.DefaultTakesItFrom64Rows'
g pull_refactored 150 'FusedTwoShotPull.*:FusedIslandPull.*:FusedPull.*'
g watchdog 150 'NcclWatchdog.*:MultiNode.*'
g poison 90 'Poison.FusedAddRmsNorm'
s chains
export TPCOMM_KNOBS=fused_twoshot_rows=1,fused_twoshot_push=1
g chains_push 150 'Chain/*/w?_twoshot_mixed:Chain/*/w?_oneshot_mixed'
unset TPCOMM_KNOBS
grep -h 'chain  ' $OUT/chains_push.log | grep -c 'fused_p2p_twoshot x'
s bench
for w in 2 4 8; do
  for k in 1 0; do
    echo "-- world $w H=7168 algo=twoshot fused_twoshot_rows=1 fused_twoshot_push=$k"
    TPCOMM_ALGO=twoshot TPCOMM_KNOBS=fused_twoshot_rows=1,fused_twoshot_push=$k timeout 60 $F \
      --ranks $w --tokens 16,64,256,1024 2>&1 | tail -6
  done
done >$OUT/bench_push.txt 2>&1
cat $OUT/bench_push.txt
s sanitizers
TPCOMM_TEST_TIMEOUT_SCALE=10 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
  --report-api-errors no $T --gtest_filter='FusedTwoShotPush.World2OneStepAndManySteps' >$OUT/san_memcheck.log 2>&1
echo "memcheck rc=$?"; grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' $OUT/san_memcheck.log | head -3
s done
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
