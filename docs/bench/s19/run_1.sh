#!/bin/bash
# Nineteenth round, device call 1 (one H200, all ranks sharing it): the first GPU run of the host
# launch-path changes of 832bcab..9bf264c (planned threads, planned epilogue grid, plan cache,
# fused staging refactor). Every other gtest suite, the Python GPU tests and doctor (tests-b),
# the late-rank chains, and an A/B of the all-reduce and the fused call against bd09a4e (the last
# commit measured on a GPU before them: expect no change).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=gpu-carry/pack/build; A=gpu-carry/pack/build-ab
nvidia-smi -L; cat $B/COMMIT $A/COMMIT
G="--ranks 2 --mode graph --min 1K --max 1M --factor 4 --backends auto,oneshot,oneshot_pull,nccl --iters 100 --reps 5"
for r in 1 2; do
  for v in old:$A new:$B; do
    echo "== round $r ${v%%:*} all-reduce"; timeout 45 ${v#*:}/bench/tpcomm-bench $G 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ |FAIL|error'
    echo "== round $r ${v%%:*} fused"; timeout 45 ${v#*:}/bench/tpcomm-bench-fused --ranks 2 2>&1 | tail -14
  done
done >$OUT/ab.txt 2>&1
echo "ab done"
TPCOMM_SUITE_SECONDS=260 TPCOMM_SUITE_PACK=1 tests/gpu/run_suite.sh $B $OUT/tb tests-b >/dev/null 2>&1
cat $OUT/tb/summary.txt
TPCOMM_SUITE_SECONDS=170 TPCOMM_SUITE_PACK=1 tests/gpu/run_suite.sh $B $OUT/ch chains >/dev/null 2>&1
cat $OUT/ch/summary.txt
