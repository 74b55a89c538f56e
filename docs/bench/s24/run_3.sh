#!/bin/bash
# Twenty-fourth round, device call 3 (one H200, all ranks sharing it), after the fix that keeps
# the fused call's unfused all-reduce at full precision under the wire: every wire chain (pull,
# push, host forms; and wire=none), the fused suites, the one-GPU Python test (all_reduce(wire=)),
# and `tpcomm tune --share-gpu --quick` (its wire step: the push form of every codec against the
# best full-precision candidate; a dry run, nothing written).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT
echo "== chains ($(date +%T))"
TPCOMM_CHAIN_SEEDS=2 timeout 150 $T --gtest_filter='Chain/LateRankChain.*wire*' >$OUT/chains.log 2>&1
echo "chains rc=$?"; grep -E '^\[ *(FAILED|PASSED) |FAILED  \]' $OUT/chains.log | head -20
grep -m3 -A10 'Failure' $OUT/chains.log | head -40
echo "== fused ($(date +%T))"
timeout 150 $T --gtest_filter='Fused.*:FusedPull.*:FusedTwoShotPush.*' >$OUT/fused.log 2>&1
echo "fused rc=$?"; grep -E '^\[ *(FAILED|PASSED) |FAILED  \]' $OUT/fused.log | head -20
echo "== python one GPU ($(date +%T))"
TPCOMM_LIBRARY=$B/src/libtpcomm.so TPCOMM_CLI=$B/tools/tpcomm PYTHONPATH=$PWD/python timeout 90 \
  python3 -m pytest python/tests/test_gpu_one_gpu.py -q -x -rs >$OUT/python.log 2>&1
echo "python rc=$?"; tail -15 $OUT/python.log
echo "== tune ($(date +%T))"
timeout 200 $B/tools/tpcomm tune --share-gpu --quick --world 2 --no-fused >$OUT/tune.txt 2>$OUT/tune.err
echo "tune rc=$?"; grep -A12 'quantized wire' $OUT/tune.txt | head -30; tail -5 $OUT/tune.err
echo "== done ($(date +%T))"
