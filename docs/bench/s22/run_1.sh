#!/bin/bash
# Twenty-second round, device call 1 (one H200, all ranks sharing it): `tpcomm tune` with the
# fused call's forms (--share-gpu: a dry run, protocol and launch overhead, not a link) at worlds
# 2 and 4, then the suite's tests-b stage (every gtest suite but World/*, the chains and the soak;
# the Python GPU tests; doctor) on the tree after the rsag rename.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build
nvidia-smi -L; cat $B/COMMIT
for w in 2 4; do
  echo "== tune --share-gpu --world $w ($(date +%T))"
  timeout 150 $B/tools/tpcomm tune --share-gpu --world $w --quick >$OUT/tune_w$w.txt 2>$OUT/tune_w$w.err
  echo "tune rc=$?"; sed -n '/The fused call/,$p' $OUT/tune_w$w.txt
done
echo "== tests-b ($(date +%T))"
TPCOMM_SUITE_SECONDS=$((560 - SECONDS)) TPCOMM_SUITE_PACK=1 tests/gpu/run_suite.sh $B $OUT/tests_b tests-b | tail -40
echo "== done ($(date +%T))"
