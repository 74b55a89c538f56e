#!/bin/bash
# GPU call 2 (issue 20): the gtest suite after the stream-order fix, diagnostics of the three
# open failures, and the old/new A/B (c38dda8 against the merged code), two ranks sharing the GPU.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
G=gpu-carry; N=$G/new; OLD=$G/old; O=${OUT:-/tmp/out}; mkdir -p $O
s=$SECONDS
LD_LIBRARY_PATH=$PWD/$N timeout -k 5 330 $N/tpcomm_gpu_tests --gtest_output=json:$O/gtest.json > $O/gtest.log 2>&1
echo "gtest rc=$? in $((SECONDS-s)) s"
grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $O/gtest.log | tail -20
grep -E "host_fence \]|\[ deadline \]|\[ mismatch \].*RMSNorm|\[streams\]" $O/gtest.log | cut -c1-300 | head -30
# host bulk, one block, 64 MiB: is the wrong data new? (tpcomm-bench checks every backend)
for b in old new; do echo "== $b host_bulk 1 block"; D=$G/$b; LD_LIBRARY_PATH=$PWD/$D TPCOMM_TRANSPORT=host timeout 60 $D/tpcomm-bench --ranks 2 --backends host_bulk --max-blocks 1 --min 16M --max 64M --factor 4 --mode eager --iters 3 --reps 1 --warmup 1 2>&1 | tail -4; done
# A/B: old and new alternating, three rounds, P2P and host, eager and graph
for round in 1 2 3; do for b in old new; do D=$G/$b
  LD_LIBRARY_PATH=$PWD/$D timeout 60 $D/tpcomm-bench --ranks 2 --backends auto --mode both --min 1K --max 1M --factor 4 --json $O/ab_${b}_$round.json > $O/ab_${b}_$round.txt 2>&1
  LD_LIBRARY_PATH=$PWD/$D TPCOMM_TRANSPORT=host timeout 60 $D/tpcomm-bench --ranks 2 --backends auto --mode both --min 1K --max 1M --factor 4 --json $O/abh_${b}_$round.json > $O/abh_${b}_$round.txt 2>&1
done; done
echo "ab done at $((SECONDS-s)) s"
tail -8 $O/ab_new_3.txt; tail -8 $O/ab_old_3.txt
cd $O && tar czf ab.tgz ab_* abh_* && rm -f ab_*.json abh_*.json && cd - >/dev/null
