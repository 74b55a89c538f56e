#!/bin/bash
# Twenty-sixth round, device call 2 (one H200, all ranks sharing it), after ../s25/run_1.sh:
#   (1) the host two-shot's pulled form (host_twoshot_pull, new) against its LL form, host_bulk
#       and the INT8 host wire, 64 KiB..16 MiB at worlds 2, 4, 8 (graphs, bf16, checked against
#       the fp64 reference): where the knob host_ll_bytes should sit;
#   (2) the late-rank chains (sizes switching, kinds mixed) of the host two-shot and the pull
#       two-shot at worlds 2..8 (both now run twoshot_pull.cu's kernel, generic over its outbox);
#   (3) the one-GPU Python test of all_reduce(wire=) and `tpcomm tune --share-gpu --quick` (its
#       wire step), which ../s24/run_3.sh was written for and never ran.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
[ -d gpu-carry/pack/build ] || tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT
bench() {  # world
  timeout 75 $B/bench/tpcomm-bench --ranks $1 --min 64K --max 16M --factor 4 --mode graph \
    --iters 10 --reps 5 --backends "host_twoshot@host_ll_bytes=1073741824,host_twoshot@host_ll_bytes=0,host_bulk,host_twoshot@wire=int8+wire_min_bytes=0" \
    >$OUT/host_pull_w$1.txt 2>&1
  echo "bench w$1 rc=$?"; grep -E '^ +[0-9]+ ' $OUT/host_pull_w$1.txt | tr -d '|' |
    awk '{printf "%10s", $1; for (i = 4; i <= NF; i += 3) printf " %9s", $i; print ""}'
  grep -E 'wrong|error|rror:' $OUT/host_pull_w$1.txt | head -5
}
echo "== host pull bench ($(date +%T)): LL, pulled, host_bulk, INT8 host wire (us)"
for w in 2 4 8; do bench $w; done
echo "== chains ($(date +%T))"
TPCOMM_CHAIN_SEEDS=1 timeout 120 $T --gtest_filter='Chain/LateRankChain.*host_twoshot_mixed:Chain/LateRankChain.*_twoshot_pull_mixed' >$OUT/chains.log 2>&1
echo "chains rc=$?"; grep -E '^\[ *(FAILED|PASSED) |FAILED  \]' $OUT/chains.log | head -20
grep -m3 -A10 'Failure' $OUT/chains.log | head -40
echo "== python one GPU ($(date +%T))"
TPCOMM_LIBRARY=$B/src/libtpcomm.so TPCOMM_CLI=$B/tools/tpcomm PYTHONPATH=$PWD/python timeout 90 \
  python3 -m pytest python/tests/test_gpu_one_gpu.py -q -x -rs >$OUT/python.log 2>&1
echo "python rc=$?"; tail -15 $OUT/python.log
echo "== tune ($(date +%T))"
timeout 170 $B/tools/tpcomm tune --share-gpu --quick --world 2 --no-fused >$OUT/tune.txt 2>$OUT/tune.err
echo "tune rc=$?"; grep -A12 'quantized wire' $OUT/tune.txt | head -30; tail -5 $OUT/tune.err
echo "== done ($(date +%T))"
