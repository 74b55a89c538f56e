#!/bin/bash
# Twenty-ninth round, device call 1 (one H200, all ranks sharing it): the all-gather push's peer
# loop no longer unrolled (0e63309), against the round before (7c81fed, where nvcc unrolled it) and
# the base of the LaunchParams move (a726197), in one process tree, rotating the order every round:
#   * tpcomm-bench (graph mode): worlds 2, 4 and 8, the push two-shot (SentinelProto) and the host
#     two-shot (LLProto), the one-shot as a control; reduce-scatter (push and pull) and all-gather
#     at world 2;
#   * then the tests of the kernels the change rebuilt (twoshot.cu, rsag.cu): Correctness.*TwoShot*,
#     HalfCollectives.*, the two-shot graph test, the late-rank chains of the push two-shots (worlds
#     2..8) and World/SharedWorld.EveryAlgorithmDefaultGrids at world 3 (the 4-rank kernels).
# Pack: TPCOMM_NO_TRACE=1 TPCOMM_AB_TREE=<a726197 with build-dev> scripts/gpu_pack.sh, then
# gpu-carry/pack/build-prev/bench/tpcomm-bench from 7c81fed's pack, re-packed with XZ_OPT=-9.
# The A/B lands in $OUT/s29_ab.tgz (a call returns few files), the tests' log in $OUT/tests.log.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rm -rf gpu-carry/pack && tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
P=$PWD/gpu-carry/pack; R=$OUT/s29; mkdir -p $R
nvidia-smi -L; cat $P/build/COMMIT $P/build-prev/COMMIT $P/build-ab/COMMIT | tee $R/commits.txt
G=(--mode graph --iters 20 --reps 9 --factor 8 --min 1K --max 4M)
dir_of() { case $1 in new) echo $P/build ;; prev) echo $P/build-prev ;; base) echo $P/build-ab ;; esac; }
echo "== A/B ($(date +%T))"
orders=("new prev base" "base new prev" "prev base new" "base prev new" "new base prev" "prev new base")
for i in 0 1 2 3 4 5; do
  for side in ${orders[$i]}; do
    b=$(dir_of $side)/bench/tpcomm-bench; n=$((i + 1))
    timeout 60 $b --ranks 2 "${G[@]}" --backends oneshot,twoshot,host_twoshot >$R/w2_${side}_$n.txt 2>&1
    timeout 60 $b --ranks 4 "${G[@]}" --backends oneshot,twoshot,host_twoshot >$R/w4_${side}_$n.txt 2>&1
    timeout 60 $b --ranks 8 "${G[@]}" --backends twoshot >$R/w8_${side}_$n.txt 2>&1
    timeout 60 $b --ranks 2 "${G[@]}" --collective reduce_scatter --backends twoshot,twoshot_pull >$R/rs_${side}_$n.txt 2>&1
    timeout 60 $b --ranks 2 "${G[@]}" --collective all_gather --backends twoshot >$R/ag_${side}_$n.txt 2>&1
    echo "round $n $side rc=$?"
  done
done
grep -L " 0 wrong elements" $R/*_[0-9].txt | sed 's/^/NOT CLEAN: /'
tar -C $OUT -czf $OUT/s29_ab.tgz s29 && rm -rf $R  # back even if the tests below run out of time
echo "== tests ($(date +%T))"
F='Correctness.World2TwoShot*:Correctness.World2HostTwoShot:HalfCollectives.*:Graph.CaptureHundredTwoShotCallsReplayThousandTimes'
F+=':Chain/LateRankChain.*/w?_twoshot_allreduce:Chain/LateRankChain.*/w?_twoshot_mixed'
F+=':Chain/LateRankChain.*/w?_host_twoshot_*:World/SharedWorld.EveryAlgorithmDefaultGrids/0'
timeout ${TESTS_SECONDS:-150} $P/build/tests/gpu/tpcomm_gpu_tests --gtest_filter="$F" >$OUT/tests.log 2>&1
echo "tests rc=$?"
grep -E '^\[ *(PASSED|FAILED|SKIPPED) *\]|tests? ran' $OUT/tests.log | head -20
echo "== done ($(date +%T))"
