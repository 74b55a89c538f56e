#!/bin/bash
# Session 14, GPU call 1 (issue 22): where the fused call's time goes. Kernel timeline stamps
# (trace builds) of the one-shot, the fused kernel with clusters and with a block per row, for the
# current kernels (cur) and the reworked ones (fast); then tpcomm-bench-fused for c38dda8 (old),
# cur and fast alternating. Two ranks share the one H200.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
G=gpu-carry; O=${OUT:-/tmp/out}; mkdir -p $O
s=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
for b in cur fast; do
  for m in "14336 oneshot" "14336 fused" "14336 fused_block" "229376 oneshot" "229376 fused" "229376 fused_block" "917504 fused" "917504 fused_block"; do
    set -- $m
    echo "== $b $1 $2"; timeout 30 $G/tr/$b/trace-oneshot $1 1000 $2 2 2>&1 | tail -6
  done
done > $O/trace.txt 2>&1
cat $O/trace.txt
echo "traces done at $((SECONDS-s)) s"
for round in 1 2; do for b in old cur fast; do
  B=$G/tr/$b/tpcomm-bench-fused; [ $b = old ] && B=$G/old/tpcomm-bench-fused
  echo "== round $round $b"; timeout 60 $B --ranks 2 --json $O/fused_${b}_$round.json 2>&1
done; done > $O/fused.txt 2>&1
cat $O/fused.txt
echo "bench done at $((SECONDS-s)) s"
