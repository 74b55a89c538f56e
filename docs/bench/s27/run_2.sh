#!/bin/bash
# Twenty-seventh round, device call 2 (one H200, all ranks sharing it): the suites run_1.sh left
# out, then an A/B of this round's kernels against the round's base (gpu-carry/pack/build-ab:
# TPCOMM_AB_TREE's benches), alternating, in the same call:
#   * Fused.*, FusedPull.*, FusedTwoShotPush.*, Wire.*, Poison.*, Correctness.*, HalfCollectives*,
#     Graph.*, Failure.*, Algo/*;
#   * tpcomm-bench (graph mode) at worlds 2 and 8, every algorithm the changed kernels serve,
#     the halves at world 2; tpcomm-bench-fused at world 4, planned and every split fused form.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
[ -d gpu-carry/pack/build ] || tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; A=$PWD/gpu-carry/pack/build-ab; T=$B/tests/gpu/tpcomm_gpu_tests
cat $B/COMMIT $A/COMMIT
summary() { grep -E '^\[ *(FAILED|PASSED|SKIPPED) |FAILED  \]' "$1" | head -12; grep -m3 -A10 'Failure$' "$1" | head -30; }
echo "== suites ($(date +%T))"
timeout 260 $T --gtest_filter='Fused.*:FusedPull.*:FusedTwoShotPush.*:Wire.*:Poison.*:Correctness.*:HalfCollectives*:Graph.*:Failure.*:Algo/*' \
  >$OUT/suites.log 2>&1
echo "suites rc=$?"; summary $OUT/suites.log
# ab NAME TIMEOUT BENCH ARGS...: this tree's BENCH and the base's, alternating, twice each.
ab() {
  local name=$1 t=$2 bench=$3; shift 3
  for r in 1 2; do
    for side in new base; do
      local dir=$B; [ $side = base ] && dir=$A
      timeout $t $dir/bench/$bench "$@" >$OUT/${name}_${side}_$r.txt 2>&1
      echo "$name $side $r rc=$?"
    done
  done
}
G=(--mode graph --iters 20 --reps 5 --factor 8 --min 1K --max 4M)
echo "== A/B ($(date +%T))"
ab w2 60 tpcomm-bench --ranks 2 "${G[@]}" \
  --backends auto,oneshot,twoshot,oneshot_pull,twoshot_pull,host_oneshot,host_twoshot,host_bulk
ab w8 70 tpcomm-bench --ranks 8 "${G[@]}" --backends oneshot,twoshot,island,island_pull,twoshot_pull,host_twoshot
ab rs 30 tpcomm-bench --ranks 2 "${G[@]}" --collective reduce_scatter --backends twoshot,twoshot_pull
ab ag 30 tpcomm-bench --ranks 2 "${G[@]}" --collective all_gather --backends twoshot,twoshot_pull
for v in planned fused_p2p_oneshot_pull fused_p2p_twoshot fused_p2p_island fused_p2p_island_pull; do
  unset TPCOMM_KNOBS; [ $v != planned ] && export TPCOMM_KNOBS="variant=$v"
  ab "fused_$v" 40 tpcomm-bench-fused --ranks 4 --tokens 1,16,128
done
echo "== done ($(date +%T))"
