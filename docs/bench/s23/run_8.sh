#!/bin/bash
# Twenty-third round, device call 9 (one H200, all ranks sharing it), after the review's tidy of
# twoshot_pull_wire.cu (area-addressed readGroup / putGroup, the failure branch over
# poison_layout.h's walk; register allocation changed): Wire.*, the wire chains, Poison's
# all-reduce cases, and the bench of run_5.sh at worlds 2 and 8.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT
TPCOMM_CHAIN_SEEDS=2 timeout 400 $T \
  --gtest_filter='Wire.*:Chain/LateRankChain.*wire*:Poison.AllReduceEveryAlgorithm' >$OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |FAILED  \]|poison   \].*wire' $OUT/tests.log | head
grep -m3 -A12 'Failure' $OUT/tests.log | head -40
W=wire_min_bytes=0
for w in 2 8; do
  timeout 90 $B/bench/tpcomm-bench --ranks $w --min 1M --max 64M --factor 4 --mode graph \
    --no-check --backends "twoshot_pull,twoshot_pull@wire=int8+$W,twoshot_pull@wire=int4+$W,twoshot_pull@wire=fp8+$W" \
    >$OUT/wire_bench_w$w.txt 2>&1
  echo "bench w$w rc=$?"; grep -E '^ +[0-9]+ ' $OUT/wire_bench_w$w.txt | tr -d '|' | awk '{print $1, $4, $7, $10, $13}'
done
