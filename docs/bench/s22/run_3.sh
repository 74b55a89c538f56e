#!/bin/bash
# Twenty-second round, device call 3 (one H200, all ranks sharing it).
# 1. A/B, alternating, tpcomm-bench-fused (bf16, H = 7168, 1..16 rows, worlds 2, 4, 8): build =
#    this tree (the block-per-row fused one-shot's fingerprint check moved to a block of its own,
#    a warp checking every peer at once), build-ab = 3036ebb with that check compiled out (the
#    floor a separate checker can reach).
# 2. The gtest suites that run the fused one-shot, its failures and mismatches: Fused, AddRmsNorm,
#    FusedPull, Poison, Algo/Mismatch, MismatchPullLL, Graph, Deadline.
# 3. The late-rank chains (all-reduce mixed with fused calls among them) in the time left.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; A=$PWD/gpu-carry/pack/build-ab
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
timeout 280 $B/tests/gpu/tpcomm_gpu_tests --gtest_filter='Fused.*:AddRmsNorm.*:FusedPull.*:Poison.*:Algo/Mismatch.*:MismatchPullLL.*:Graph.*:Deadline.*' >$OUT/fused_gtests.log 2>&1
echo "gtests rc=$?"; grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |tests ran' $OUT/fused_gtests.log | head -20
echo "== chains ($(date +%T))"
TPCOMM_SUITE_SECONDS=$((570 - SECONDS)) TPCOMM_SUITE_PACK=1 tests/gpu/run_suite.sh $B $OUT/chains chains | tail -12
echo "== done ($(date +%T))"
