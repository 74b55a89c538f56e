#!/bin/bash
# Twenty-third round, device call 2 (one H200, all ranks sharing it), after run_1.sh: the flag
# pull wire back to its inline check (the check block measured slower there), the LL wire keeping
# the check block.
# 1. A/B, alternating, tpcomm-bench-fused (bf16, us per call, CUDA graphs): build = this tree,
#    build-ab = c4d7895. The fused pull one-shot over LL entries (pull_ll_bytes=65536,
#    fused_pull_ll=1: the pair's all-reduce takes LL entries too, up to 4 rows of 7168), check
#    block (this tree) against the check in block 0's last thread (c4d7895), and this tree's
#    flag wire with the same all-reduce, worlds 2, 4, 8 at H = 7168 and world 2 at H = 4096.
# 2. The gtests run_1.sh failed or that changed since: FusedIsland.*, FusedPull.*, Fused.*,
#    MismatchPullLL.*.
# 3. compute-sanitizer memcheck and racecheck on the fused islands (world 4, one step and many).
# 4. The late-rank chains of the fused islands and the pull one-shot mixed with fused calls.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; A=$PWD/gpu-carry/pack/build-ab; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT $A/COMMIT
bench() {  # side knobs world hidden tokens
  local bin=$B/bench/tpcomm-bench-fused; [ "$1" = ab ] && bin=$A/bench/tpcomm-bench-fused
  TPCOMM_ALGO=oneshot_pull TPCOMM_KNOBS=$2 timeout 60 $bin --ranks $3 --hidden $4 --tokens $5 2>&1 |
    grep -E '^ *[0-9]+ '
}
LL=pull_ll_bytes=65536,fused_pull_ll=1; FLAG=pull_ll_bytes=65536
echo "== LL check-block A/B ($(date +%T))"
for rep in 1 2; do
  for wh in 2:7168 4:7168 8:7168 2:4096; do
    for side in new:$LL ab:$LL new:$FLAG; do
      echo "-- rep $rep world ${wh%:*} H ${wh#*:} ${side%%:*} ${side#*:}"
      bench ${side%%:*} ${side#*:} ${wh%:*} ${wh#*:} 1,2,4
    done
  done
done >$OUT/ll_checkblock_ab.txt
echo "== gtests ($(date +%T))"
timeout 200 $T --gtest_filter='FusedIsland.*:FusedPull.*:Fused.*:MismatchPullLL.*' >$OUT/gtests.log 2>&1
echo "gtests rc=$?"; grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |FAILED  \]' $OUT/gtests.log | head -20
echo "== sanitizers ($(date +%T))"
for tool in memcheck racecheck; do
  TPCOMM_PDL=0 timeout 100 compute-sanitizer --tool $tool --error-exitcode 99 $T \
    --gtest_filter='FusedIsland.World4OneStepAndManySteps' >$OUT/san_$tool.log 2>&1
  echo "$tool rc=$?"; grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/san_$tool.log | head -4
done
echo "== chains ($(date +%T))"
TPCOMM_CHAIN_SEEDS=2 timeout $((570 - SECONDS)) $T \
  --gtest_filter='Chain/LateRankChain.*island*mixed*:Chain/LateRankChain.*oneshot_pull_mixed*' \
  >$OUT/chains.log 2>&1
echo "chains rc=$?"; grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |FAILED  \]' $OUT/chains.log | head -20
echo "== done ($(date +%T))"
