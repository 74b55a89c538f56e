#!/bin/bash
# Twenty-sixth round, device call 3 (one H200, all ranks sharing it): (1) the host two-shot's LL
# and pulled forms, host_bulk and host_oneshot from 32 KiB to 2 MiB, where run_2.sh saw them cross
# (for the knob host_ll_bytes and the host tables); (2) the World/* GPU suites (every algorithm
# forced at worlds 2..8: host_twoshot's calls above host_ll_bytes now run the pulled form), within
# the call's time.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
[ -d gpu-carry/pack/build ] || tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build
cat $B/COMMIT
echo "== crossover ($(date +%T)): LL, pulled, host_bulk, host_oneshot (us)"
for w in 2 4 8; do
  timeout 45 $B/bench/tpcomm-bench --ranks $w --min 32K --max 2M --factor 2 --mode graph \
    --iters 20 --reps 5 --backends "host_twoshot@host_ll_bytes=1073741824,host_twoshot@host_ll_bytes=0,host_bulk,host_oneshot" \
    >$OUT/crossover_w$w.txt 2>&1
  echo "w$w rc=$?"; grep -E '^ +[0-9]+ ' $OUT/crossover_w$w.txt | tr -d '|' |
    awk '{printf "%10s", $1; for (i = 4; i <= NF; i += 3) printf " %9s", $i; print ""}'
  grep -E 'wrong' $OUT/crossover_w$w.txt | head -2
done
echo "== World/* ($(date +%T))"
TPCOMM_SUITE_SECONDS=420 TPCOMM_SUITE_PACK=1 tests/gpu/run_suite.sh $B $OUT tests-a 2>&1 | tail -25
echo "== done ($(date +%T))"
