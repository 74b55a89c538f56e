#!/bin/bash
# Session 13, GPU call 1 (issue 20): the whole suite on the merged code + the stream-order marks,
# then old (c38dda8) / new A/B alternating, five rounds, P2P and host, graph and eager.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
G=gpu-carry; N=$G/new; O=${OUT:-/tmp/out}; mkdir -p $O/ab
s=$SECONDS
LD_LIBRARY_PATH=$PWD/$N timeout -k 5 320 $N/tpcomm_gpu_tests --gtest_output=json:$O/gtest.json > $O/gtest.log 2>&1
echo "gtest rc=$? in $((SECONDS-s)) s"
grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $O/gtest.log | tail -20
grep -E "host_fence \]|\[streams\]" $O/gtest.log | cut -c1-250 | head -20
for round in 1 2 3 4 5; do for b in old new; do D=$G/$b
  [ $((SECONDS-s)) -gt 540 ] && break 2
  LD_LIBRARY_PATH=$PWD/$D timeout 40 $D/tpcomm-bench --ranks 2 --backends auto --mode both --min 1K --max 1M --factor 4 --reps 15 --json $O/ab/p_${b}_$round.json > /dev/null 2>&1
  LD_LIBRARY_PATH=$PWD/$D TPCOMM_TRANSPORT=host timeout 40 $D/tpcomm-bench --ranks 2 --backends auto --mode both --min 1K --max 1M --factor 4 --reps 15 --json $O/ab/h_${b}_$round.json > /dev/null 2>&1
done; echo "round $round done at $((SECONDS-s)) s"; done
python3 $G/abstat.py $O/ab | tee $O/ab_summary.txt
cd $O && tar czf ab.tgz ab && rm -rf ab
