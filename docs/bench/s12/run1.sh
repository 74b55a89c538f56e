#!/bin/bash
# GPU call 1 (issue 20): the whole gtest suite on the merged code (default grids, worlds 3..8
# sharing the one GPU), then the Python GPU tests (the fused op).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
G=gpu-carry; N=$G/new; O=${OUT:-/tmp/out}; mkdir -p $O
export LD_LIBRARY_PATH=$PWD/$N
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > $O/gpu.txt 2>&1
s=$SECONDS; timeout -k 5 450 $N/tpcomm_gpu_tests --gtest_output=json:$O/gtest.json > $O/gtest.log 2>&1
echo "gtest rc=$? in $((SECONDS-s)) s"
grep -E "^\[  (PASSED|FAILED)|FAILED  \]|SKIPPED \]|^\[       OK \]" $O/gtest.log | awk '{print}' | tail -80
grep -B3 -A12 "Failure$\|error:" $O/gtest.log | head -120
s=$SECONDS
TPCOMM_LIBRARY=$PWD/$N/libtpcomm.so TPCOMM_CLI=$PWD/$N/tpcomm PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 timeout 100 python3 -m pytest python/tests -q -m gpu -p no:cacheprovider -s > $O/pytest_gpu.txt 2>&1
echo "pytest rc=$? in $((SECONDS-s)) s"; tail -15 $O/pytest_gpu.txt
