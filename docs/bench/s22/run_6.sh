#!/bin/bash
# Twenty-second round, device call 6 (one H200, all ranks sharing it), after the review's
# refactor of tune's helpers: python/tests/test_gpu_tune.py and `tpcomm tune --share-gpu --world 4
# --quick`.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build
cat $B/COMMIT
TPCOMM_LIBRARY=$B/src/libtpcomm.so TPCOMM_CLI=$B/tools/tpcomm PYTHONPATH=python timeout 100 \
  python3 -m pytest python/tests/test_gpu_tune.py -q -m gpu -p no:cacheprovider 2>&1 | tail -2
timeout 60 $B/tools/tpcomm tune --share-gpu --world 4 --quick 2>/dev/null | sed -n '/The fused call/,$p'
