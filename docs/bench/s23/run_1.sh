#!/bin/bash
# Twenty-third round, device call 1 (one H200, all ranks sharing it).
# 1. A/B, alternating, tpcomm-bench-fused (bf16; us per call, CUDA graphs): build = this tree,
#    build-ab = c4d7895 (the last round's end).
#    a. The fused pull one-shot with its check block (this tree) against the check in block 0's
#       last thread (c4d7895): the all-reduce forced to oneshot_pull, 1..16 rows, H = 7168 at
#       worlds 2, 4, 8, H = 4096 at world 2; the pair (the pull all-reduce, then the epilogue
#       kernel) in the same process.
#    b. The fused two-shot over pushes after its kernel became one of two forms
#       (fusedSplitPush): 64 and 256 rows, worlds 4 and 8.
# 2. The fused island over pushes (new) next to the island's unfused pair and the fused island
#    over pull: TPCOMM_ALGO=island / island_pull, 1..1024 rows, worlds 4 and 8.
# 3. The gtests of what changed: FusedIsland.*, FusedTwoShotPush.*, FusedPull.*, Fused.*,
#    Algo/Mismatch.* (the fused call now also against oneshot_pull, island, island_pull), Poison.*.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; A=$PWD/gpu-carry/pack/build-ab; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT $A/COMMIT
bench() {  # side algo knobs world hidden tokens
  local bin=$B/bench/tpcomm-bench-fused; [ "$1" = ab ] && bin=$A/bench/tpcomm-bench-fused
  TPCOMM_ALGO=$2 TPCOMM_KNOBS=$3 timeout 60 $bin --ranks $4 --hidden $5 --tokens $6 2>&1 |
    grep -E '^ *[0-9]+ '
}
echo "== pull check-block A/B ($(date +%T))"
for rep in 1 2; do
  for wh in 2:7168 4:7168 8:7168 2:4096; do
    for side in new ab; do
      echo "-- rep $rep world ${wh%:*} H ${wh#*:} $side"
      bench $side oneshot_pull "" ${wh%:*} ${wh#*:} 1,2,4,8,16
    done
  done
done >$OUT/pull_checkblock_ab.txt
echo "== push two-shot A/B ($(date +%T))"
for w in 4 8; do
  for side in new ab; do
    echo "-- world $w $side"
    bench $side oneshot fused_twoshot_rows=1,fused_twoshot_push=1 $w 7168 64,256
  done
done >$OUT/push_twoshot_ab.txt
echo "== fused islands ($(date +%T))"
for w in 4 8; do
  for algo in island island_pull; do
    echo "-- world $w $algo"
    bench new $algo "" $w 7168 1,16,64,256,1024
  done
done >$OUT/islands.txt
cat $OUT/islands.txt
echo "== gtests ($(date +%T))"
timeout 330 $T --gtest_filter='FusedIsland.*:FusedTwoShotPush.*:FusedPull.*:Fused.*:Algo/Mismatch.*:Poison.*' >$OUT/gtests.log 2>&1
echo "gtests rc=$?"; grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |FAILED  \]' $OUT/gtests.log | head -20
echo "== done ($(date +%T))"
