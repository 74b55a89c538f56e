#!/bin/bash
# Twenty-second round, device call 2 (one H200, all ranks sharing it).
# 1. `tpcomm tune --share-gpu` with the fused call's forms, worlds 2, 4 and 8 (quick), and its
#    GPU test (python/tests/test_gpu_tune.py).
# 2. A/B, alternating, tpcomm-bench-fused (bf16, H = 7168), build = this tree, build-ab = the
#    tree at 3036ebb with the block-per-row fused one-shot's fingerprint check compiled out
#    (the most a checker warp of its own could save): the fused call at 1..16 rows (ranks sharing
#    a GPU launch no clusters: a block per row), worlds 2, 4, 8.
# 3. The same pair of builds on the row-split kernels (this tree: openRowSplit / publishPullStep,
#    register allocation changed; build-ab: the kernels before): the fused two-shot over pull,
#    its push form and the fused island, 64 and 256 rows.
# 4. The fused gtest suites on this tree's kernels.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; A=$PWD/gpu-carry/pack/build-ab
nvidia-smi -L; cat $B/COMMIT $A/COMMIT
for w in 2 4 8; do
  echo "== tune --share-gpu --world $w ($(date +%T))"
  timeout 100 $B/tools/tpcomm tune --share-gpu --world $w --quick >$OUT/tune_w$w.txt 2>$OUT/tune_w$w.err
  echo "tune rc=$?"; sed -n '/The fused call/,$p' $OUT/tune_w$w.txt
done
echo "== test_gpu_tune ($(date +%T))"
TPCOMM_LIBRARY=$B/src/libtpcomm.so TPCOMM_CLI=$B/tools/tpcomm PYTHONPATH=python timeout 200 \
  python3 -m pytest python/tests/test_gpu_tune.py -q -m gpu -p no:cacheprovider 2>&1 | tail -3
echo "== checker A/B ($(date +%T))"
for rep in 1 2 3; do
  for w in 2 4 8; do
    for side in new ab; do
      bin=$B/bench/tpcomm-bench-fused; [ $side = ab ] && bin=$A/bench/tpcomm-bench-fused
      echo "-- rep $rep world $w $side"
      timeout 60 $bin --ranks $w --hidden 7168 --tokens 1,2,4,8,16 2>&1 | grep -E '^ *[0-9]+ '
    done
  done
done >$OUT/checker_ab.txt
echo "== row-split A/B ($(date +%T))"
for rep in 1 2; do
  for cfg in "pull|fused_twoshot_rows=1,pull_ll_bytes=0|oneshot_pull" \
             "push|fused_twoshot_rows=1,fused_twoshot_push=1|oneshot" \
             "island|fused_twoshot_rows=0|island_pull"; do
    IFS='|' read -r name knobs algo <<<"$cfg"
    for w in 4 8; do
      for side in new ab; do
        bin=$B/bench/tpcomm-bench-fused; [ $side = ab ] && bin=$A/bench/tpcomm-bench-fused
        echo "-- rep $rep $name world $w $side"
        TPCOMM_KNOBS=$knobs TPCOMM_ALGO=$algo timeout 60 $bin --ranks $w --hidden 7168 \
          --tokens 64,256 2>&1 | grep -E '^ *[0-9]+ '
      done
    done
  done
done >$OUT/rowsplit_ab.txt
echo "== fused gtests ($(date +%T))"
timeout 150 $B/tests/gpu/tpcomm_gpu_tests --gtest_filter='FusedIslandPull.*:FusedTwoShotPull.*:FusedTwoShotPush.*:FusedPull.EveryPathGivesTheSameBits' >$OUT/fused.log 2>&1
echo "fused rc=$?"; grep -E '^\[ *(FAILED|PASSED|  SKIPPED) ' $OUT/fused.log | head
echo "== done ($(date +%T))"
