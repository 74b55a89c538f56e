#!/bin/bash
# Twenty-second round, device call 5 (one H200, all ranks sharing it), on 3415561: `tpcomm tune
# --share-gpu --quick` at worlds 2, 4 and 8 with the final kernels (the fused one-shot's check
# block), both fused picks (fused_twoshot_rows, fused_unfused_below), and its GPU test.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build
nvidia-smi -L; cat $B/COMMIT
for w in 2 4 8; do
  echo "== tune --share-gpu --world $w ($(date +%T))"
  timeout 100 $B/tools/tpcomm tune --share-gpu --world $w --quick >$OUT/tune_w$w.txt 2>$OUT/tune_w$w.err
  echo "tune rc=$?"; sed -n '/The fused call/,$p' $OUT/tune_w$w.txt
done
echo "== test_gpu_tune ($(date +%T))"
TPCOMM_LIBRARY=$B/src/libtpcomm.so TPCOMM_CLI=$B/tools/tpcomm PYTHONPATH=python timeout 150 \
  python3 -m pytest python/tests/test_gpu_tune.py -q -m gpu -p no:cacheprovider 2>&1 | tail -3
echo "== done ($(date +%T))"
