#!/bin/bash
# Twenty-first round, device call 1 (one H200, all ranks sharing it): the fused island over pull
# (fused_island_pull.cu) against the host reference in island order, against the unfused push
# island's bits, under a dead peer (poison), in graphs, in the late-rank chains of island_pull
# (its fused calls now take it); the fused two-shot after its refactor (shared helpers); memcheck
# and racecheck; then its timings against the unfused island_pull pair at worlds 4 and 8.
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
g island 200 'FusedIslandPull.*'
g twoshot 150 'FusedTwoShotPull.*:FusedPull.EveryPathGivesTheSameBits'
g poison 150 'Poison.FusedAddRmsNorm'
s chains
g chains_island 200 'Chain/*island_pull*'
grep -h 'chain  ' $OUT/chains_island.log | grep -c fused_p2p_island_pull
s bench
for w in 4 8; do
  echo "-- world $w H=7168 algo=island_pull"
  TPCOMM_ALGO=island_pull timeout 60 $F --ranks $w --tokens 1,4,16,64,256,1024 2>&1 | tail -8
  echo "-- world $w H=7168 algo=twoshot_pull fused_twoshot_rows=1 (the flat fused two-shot)"
  TPCOMM_ALGO=twoshot_pull TPCOMM_KNOBS=fused_twoshot_rows=1 timeout 60 $F --ranks $w \
    --tokens 1,4,16,64,256,1024 2>&1 | tail -8
done >$OUT/bench_island.txt 2>&1
cat $OUT/bench_island.txt
s sanitizers
for tool in memcheck racecheck; do
  TPCOMM_TEST_TIMEOUT_SCALE=10 timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 \
    --report-api-errors no $T --gtest_filter='FusedIslandPull.World4OneStepAndManySteps' >$OUT/san_$tool.log 2>&1
  echo "$tool rc=$?"; grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' $OUT/san_$tool.log | head -3
done
s done
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
