#!/bin/bash
# Twenty-second round, device call 4 (one H200, all ranks sharing it), on e3882dc (the check block
# planned only within the co-resident cap):
# 1. A/B, alternating, as run_3.sh: build = this tree, build-ab = 3036ebb with the block-per-row
#    fused one-shot's check compiled out.
# 2. The fused gtest suites (as run_3.sh), compute-sanitizer memcheck and racecheck on the
#    block-per-row fused one-shot.
# 3. The late-rank chains in the time left.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; A=$PWD/gpu-carry/pack/build-ab; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT $A/COMMIT
echo "== check-block A/B ($(date +%T))"
for rep in 1 2 3; do
  for w in 2 4 8; do
    for side in new ab; do
      bin=$B/bench/tpcomm-bench-fused; [ $side = ab ] && bin=$A/bench/tpcomm-bench-fused
      echo "-- rep $rep world $w $side"
      timeout 60 $bin --ranks $w --hidden 7168 --tokens 1,2,4,8,16 2>&1 | grep -E '^ *[0-9]+ '
    done
  done
done >$OUT/checkblock_ab.txt
echo "== fused gtests ($(date +%T))"
timeout 200 $T --gtest_filter='Fused.*:AddRmsNorm.*:FusedPull.*:Poison.*:Algo/Mismatch.*:MismatchPullLL.*:Graph.*:Deadline.*' >$OUT/fused_gtests.log 2>&1
echo "gtests rc=$?"; grep -E '^\[ *(FAILED|PASSED|  SKIPPED) ' $OUT/fused_gtests.log | head -12
echo "== sanitizers ($(date +%T))"
for tool in memcheck racecheck; do
  TPCOMM_PDL=0 timeout 90 compute-sanitizer --tool $tool --error-exitcode 99 $T \
    --gtest_filter='Fused.World2OneShot:Fused.World2HostOneShot:Fused.MixedAlignmentAcrossRanks' >$OUT/san_$tool.log 2>&1
  echo "$tool rc=$?"; grep -E 'ERROR SUMMARY|PASSED|FAILED' $OUT/san_$tool.log | head -4
done
echo "== chains ($(date +%T))"
TPCOMM_SUITE_SECONDS=$((560 - SECONDS)) TPCOMM_SUITE_PACK=1 tests/gpu/run_suite.sh $B $OUT/chains chains | tail -8
echo "== done ($(date +%T))"
