#!/bin/bash
# Twenty-sixth round, device call 4 (one H200, all ranks sharing it), after the host tables gave
# host_twoshot the mid sizes from three ranks (6ad4a03): auto over host memory
# (TPCOMM_TRANSPORT=host) next to host_bulk at worlds 4 and 8, checked against the fp64
# reference; the late-rank chains under auto over host memory, worlds 2..8; the poison and
# correctness suites (every algorithm, host_twoshot's pulled form among them).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rm -rf gpu-carry/pack && tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
cat $B/COMMIT
echo "== auto over host memory ($(date +%T)): auto, host_bulk (us)"
for w in 4 8; do
  TPCOMM_TRANSPORT=host timeout 45 $B/bench/tpcomm-bench --ranks $w --min 64K --max 4M --factor 4 \
    --mode graph --iters 20 --reps 5 --backends "auto,host_bulk" >$OUT/auto_host_w$w.txt 2>&1
  echo "w$w rc=$?"; grep -E '^ +[0-9]+ ' $OUT/auto_host_w$w.txt | tr -d '|' |
    awk '{printf "%10s %9s %9s  %s\n", $1, $4, $7, $NF}'
  grep -E 'wrong' $OUT/auto_host_w$w.txt | head -2
done
echo "== chains, auto over host memory ($(date +%T))"
TPCOMM_TRANSPORT=host TPCOMM_CHAIN_SEEDS=1 timeout 200 $T --gtest_filter='Chain/*auto*' \
  >$OUT/chains_host.log 2>&1
echo "chains rc=$?"; grep -E '^\[ *(FAILED|PASSED) |FAILED  \]' $OUT/chains_host.log | head -20
grep -m3 -A10 'Failure' $OUT/chains_host.log | head -40
echo "== poison, correctness ($(date +%T))"
timeout 150 $T --gtest_filter='Poison.*:Correctness.*' >$OUT/poison.log 2>&1
echo "poison rc=$?"; grep -E '^\[ *(FAILED|PASSED) |FAILED  \]' $OUT/poison.log | head -20
grep -m3 -A10 'Failure' $OUT/poison.log | head -40
echo "== done ($(date +%T))"
