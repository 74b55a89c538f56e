#!/bin/bash
# Session 13, GPU call 2: the whole gtest suite on the merged round (pull, CE, RS/AG, cluster,
# stream marks), then the Python GPU tests (torch 2.11). Two ranks share the one H200.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
G=gpu-carry; N=$G/new; O=${OUT:-/tmp/out}; mkdir -p $O
s=$SECONDS
LD_LIBRARY_PATH=$PWD/$N timeout -k 5 430 $N/tpcomm_gpu_tests --gtest_output=json:$O/gtest.json > $O/gtest.log 2>&1
echo "gtest rc=$? in $((SECONDS-s)) s"
grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $O/gtest.log | tail -30
grep -E "^\[ RUN" $O/gtest.log | tail -1
s2=$SECONDS
TPCOMM_LIBRARY=$PWD/$N/libtpcomm.so TPCOMM_CLI=$PWD/$N/tpcomm PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 timeout 150 python3 -m pytest python/tests -q -m gpu -p no:cacheprovider -s > $O/pytest_gpu.txt 2>&1
echo "pytest rc=$? in $((SECONDS-s2)) s"; grep -E "passed|failed|error" $O/pytest_gpu.txt | tail -5; grep -E "^(FAILED|ERROR)" $O/pytest_gpu.txt | head -20
