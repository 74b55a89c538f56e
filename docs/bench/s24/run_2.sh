#!/bin/bash
# Twenty-fourth round, device call 2 (one H200, all ranks sharing it): (1) the chains that failed
# in call 1 (fused calls wrong in the push and host wire chains) beside the same chains without a
# codec (wire=none, the same 1 MiB buffers): is it the wire or the small buffers? (2) The bench of
# the three forms against their full-precision two-shot (graphs, bf16, --no-check: the gtests
# check the values): pull (twoshot_pull), push (twoshot), host (host_twoshot, host_bulk).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT
echo "== chains ($(date +%T))"
TPCOMM_CHAIN_SEEDS=2 timeout 120 $T --gtest_filter='Chain/LateRankChain.*w3_twoshot_mixed*:Chain/LateRankChain.*w2_host_twoshot_mixed*:Chain/LateRankChain.*w8_host_twoshot_mixed*:Chain/LateRankChain.*_twoshot_mixed_wire_none*' >$OUT/chains.log 2>&1
echo "chains rc=$?"; grep -E '^\[ *(FAILED|PASSED) |OK \]|FAILED  \]' $OUT/chains.log | head -20
grep -m4 -A10 'Failure' $OUT/chains.log | head -60
W=wire_min_bytes=0
bench() {  # name, world, max, backends
  timeout 100 $B/bench/tpcomm-bench --ranks $2 --min 1M --max $3 --factor 4 --mode graph \
    --no-check --backends "$4" >$OUT/${1}_w$2.txt 2>&1
  echo "bench $1 w$2 rc=$?"; grep -E '^ +[0-9]+ ' $OUT/${1}_w$2.txt | tr -d '|' |
    awk '{printf "%10s", $1; for (i = 4; i <= NF; i += 3) printf " %9s", $i; print ""}'
}
for w in 2 4 8; do
  bench pull $w 64M "twoshot_pull,twoshot_pull@wire=int8+$W,twoshot_pull@wire=int4+$W,twoshot_pull@wire=fp8+$W"
  bench push $w 64M "twoshot,twoshot@wire=int8+$W,twoshot@wire=int4+$W,twoshot@wire=fp8+$W"
  bench host $w 16M "host_twoshot,host_bulk,host_twoshot@wire=int8+$W,host_twoshot@wire=int4+$W,host_twoshot@wire=fp8+$W"
done
echo "== done ($(date +%T))"
