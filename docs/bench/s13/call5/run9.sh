#!/bin/bash
# Session 13, GPU call 5: the plugin fusion test's failure, with and without the fused clusters.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
N=gpu-carry/new; O=${OUT:-/tmp/out}; mkdir -p $O
export TPCOMM_LIBRARY=$PWD/$N/libtpcomm.so TPCOMM_CLI=$PWD/$N/tpcomm PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest python/tests -m gpu -p no:cacheprovider -rA -q > $O/all.txt 2>&1; echo "all rc=$?"
grep -E "^(PASSED|FAILED|SKIPPED|ERROR)" $O/all.txt | cut -c1-160
TPCOMM_KNOBS=fused_cluster=0 timeout 100 python3 -m pytest python/tests/test_gpu_plugin_fusion.py -m gpu -p no:cacheprovider -q > $O/nocluster.txt 2>&1; echo "fused_cluster=0 rc=$?"
grep -E "AssertionError|passed|failed" $O/nocluster.txt | tail -3 | cut -c1-200
