#!/bin/bash
# GPU call 4: the record poll without backoff; A/B old (c38dda8) / new, graph mode, two rounds;
# then the whole suite on the final code.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
G=gpu-carry; O=${OUT:-/tmp/out}; mkdir -p $O
for round in 1; do for b in old new; do D=$G/$b
  LD_LIBRARY_PATH=$PWD/$D timeout 60 $D/tpcomm-bench --ranks 2 --backends auto --mode graph --min 1K --max 256K --factor 4 > $O/c_${b}_$round.txt 2>&1
  LD_LIBRARY_PATH=$PWD/$D TPCOMM_TRANSPORT=host timeout 60 $D/tpcomm-bench --ranks 2 --backends auto --mode graph --min 1K --max 256K --factor 4 > $O/ch_${b}_$round.txt 2>&1
done; done
for f in c ch; do for b in old new; do echo "== $f $b"; grep -E "^ +[0-9]" $O/${f}_${b}_1.txt | awk '{print $1, $4}' | tr '\n' ' '; echo; done; done
s=$SECONDS; LD_LIBRARY_PATH=$PWD/$G/new timeout -k 5 330 $G/new/tpcomm_gpu_tests > $O/gtest.log 2>&1
echo "gtest rc=$? in $((SECONDS-s)) s"; grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $O/gtest.log | tail -12
cd $O && tar czf c.tgz c_* ch_* && rm -f c_* ch_*
