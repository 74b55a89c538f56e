#!/bin/bash
# Session 13, GPU call 4: the fused call's slowdown, old (c38dda8, before issue 20) against new,
# same run, alternating, two rounds; new also with fused_cluster=0. Two ranks share the H200.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
F=gpu-carry/fz; O=${OUT:-/tmp/out}; mkdir -p $O
for round in 1 2; do
  timeout 60 $F/old-fused --ranks 2 > $O/old_$round.txt 2>&1; echo "old $round rc=$?"
  timeout 60 $F/new-fused --ranks 2 > $O/new_$round.txt 2>&1; echo "new $round rc=$?"
done
for f in old_1 new_1 old_2 new_2; do echo "== $f"; grep -E "^ +[0-9]+ " $O/$f.txt | head -9; done
