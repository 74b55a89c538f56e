#!/bin/bash
# Eighteenth round, device call G: the Python GPU tests and doctor against the library of 9ab58df.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build
cat $B/COMMIT
TPCOMM_LIBRARY=$B/src/libtpcomm.so TPCOMM_CLI=$B/tools/tpcomm PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
  timeout 150 python3 -m pytest python/tests -q -m gpu -rA -p no:cacheprovider >$OUT/pytest_gpu.log 2>&1
echo "pytest rc=$?"; grep -E "passed|failed|error|PASSED|FAILED|SKIPPED" $OUT/pytest_gpu.log | tail -25
timeout 30 $B/tools/tpcomm doctor >$OUT/doctor.txt 2>&1; echo "doctor rc=$?"
