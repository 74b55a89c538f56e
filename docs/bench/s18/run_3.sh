#!/bin/bash
# Eighteenth round, device call F: A/B of the pull LL poison placements against c3872df (old),
# then poisoning, fused mixed alignment and the chains (push and host) on this build.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=gpu-carry/pack/build; A=gpu-carry/pack/build-ab; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT $A/COMMIT
for c in D A; do xz -dkf gpu-carry/cand$c/tpcomm-bench.xz; chmod +x gpu-carry/cand$c/tpcomm-bench; done
G="--ranks 2 --mode graph --min 1K --max 1M --factor 4 --backends oneshot,oneshot_pull --iters 100 --reps 7 --no-check"
for r in 1 2 3 4; do
  for v in old:$A/bench/tpcomm-bench new:$B/bench/tpcomm-bench D:gpu-carry/candD/tpcomm-bench A:gpu-carry/candA/tpcomm-bench; do
    echo "== round $r ${v%%:*}"; timeout 45 ${v#*:} $G 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ '
  done
done >$OUT/ab.txt 2>&1
echo ab done
timeout 150 $T --gtest_filter='Poison*:Failure.*:Deadline*:HostSentinel.*:Fused.MixedAlignment*:Fused.World2*:Fused.GraphReplay*:CorrectnessPullLL*:*PullLL*' >$OUT/poison.log 2>&1
grep -E '^\[ *(FAILED|PASSED) |tests? ran' $OUT/poison.log | tail -12
TPCOMM_SUITE_SECONDS=290 tests/gpu/run_suite.sh $B $OUT/chains chains >/dev/null 2>&1
cat $OUT/chains/summary.txt
cd $OUT && tar czf logs.tgz chains poison.log && rm -rf chains poison.log
