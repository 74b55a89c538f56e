#!/bin/bash
# Eighteenth round, device call D: A/B of the pull LL poison store (old c3872df, new: out of line,
# candB: a select), then the chains and the World/* matrix on this build.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
xz -dkf gpu-carry/candB/tpcomm-bench.xz; chmod +x gpu-carry/candB/tpcomm-bench
B=gpu-carry/pack/build; A=gpu-carry/pack/build-ab
nvidia-smi -L; cat $B/COMMIT $A/COMMIT
G="--ranks 2 --mode graph --min 1K --max 1M --factor 4 --backends oneshot,oneshot_pull --iters 100 --reps 7 --no-check"
for r in 1 2 3 4; do
  for v in old:$A/bench/tpcomm-bench new:$B/bench/tpcomm-bench candB:gpu-carry/candB/tpcomm-bench; do
    echo "== round $r ${v%%:*}"; timeout 45 ${v#*:} $G 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ '
  done
done >$OUT/ab.txt 2>&1
echo ab done
TPCOMM_SUITE_SECONDS=220 tests/gpu/run_suite.sh $B $OUT/chains chains >/dev/null 2>&1
cat $OUT/chains/summary.txt
TPCOMM_SUITE_SECONDS=230 tests/gpu/run_suite.sh $B $OUT/ta tests-a >/dev/null 2>&1
cat $OUT/ta/summary.txt
cd $OUT && tar czf logs.tgz chains ta && rm -rf chains ta
