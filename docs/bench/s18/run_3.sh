#!/bin/bash
# Eighteenth round, device call F: A/B of the pull LL poison placements against c3872df (old),
# then poisoning and the pull LL tests, then the late-rank chains of the changed kernels' families.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=gpu-carry/pack/build; A=gpu-carry/pack/build-ab; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT $A/COMMIT
for c in D A; do xz -dkf gpu-carry/cand$c/tpcomm-bench.xz; chmod +x gpu-carry/cand$c/tpcomm-bench; done
G="--ranks 2 --mode graph --min 1K --max 1M --factor 4 --backends oneshot,oneshot_pull --iters 100 --reps 7 --no-check"
for r in 1 2 3; do
  for v in old:$A/bench/tpcomm-bench new:$B/bench/tpcomm-bench D:gpu-carry/candD/tpcomm-bench A:gpu-carry/candA/tpcomm-bench; do
    echo "== round $r ${v%%:*}"; timeout 45 ${v#*:} $G 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ '
  done
done >$OUT/ab.txt 2>&1
echo ab done
timeout 100 $T --gtest_filter='Poison*:Failure.*:Deadline*:*PullLL*:Fused.MixedAlignment*' >$OUT/poison.log 2>&1
grep -E '^\[ *(FAILED|PASSED) |tests? ran' $OUT/poison.log | tail -12
timeout 150 $T --gtest_filter='Chain/*_auto_*:Chain/*_oneshot_pull_*:Chain/*_oneshot_*:Chain/*_host_oneshot_*:Chain/*_island_pull_*' >$OUT/chains.log 2>&1
grep -E '^\[ *(FAILED|PASSED) |tests? ran' $OUT/chains.log | tail -12; grep -c '^\[       OK' $OUT/chains.log
cd $OUT && tar czf logs.tgz poison.log chains.log && rm -f poison.log chains.log
