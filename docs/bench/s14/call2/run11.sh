#!/bin/bash
# Session 14, GPU call 2 (issue 22): per-rank traces of the reworked fused kernels, `reduce` now
# until the grid's last warp has its sums. Two ranks share the one H200 (four in the last rows).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
G=gpu-carry; O=${OUT:-/tmp/out}; mkdir -p $O
T=$G/tr/fast/trace-oneshot
for m in "14336 oneshot 2" "14336 fused 2" "14336 fused_block 2" "8192 fused 2 4096" "8192 fused_block 2 4096" \
         "229376 fused 2" "229376 fused_block 2" "917504 fused_block 2" "14336 fused 4"; do
  set -- $m
  echo "== $*"; timeout 30 $T $1 1000 $2 $3 ${4:-7168} 2>&1 | tail -10
done > $O/trace.txt 2>&1
cat $O/trace.txt
