#!/bin/bash
# Twenty-third round, device call 8 (one H200, all ranks sharing it): the late-rank chains opted
# into a quantized wire (INT8 at worlds 2..8, FP8 e5m2 at 3 and 8, INT4 at 4; the two-shot pull
# forced, 1 MiB buffers, the wire from 64 KiB: its calls in many steps interleaved with the plain
# pull variants, the fused calls and the halves on the same slots, a rank running late before
# one call in four), every wire call against the host emulation bit for bit; Wire.* again (its
# emulation now shared with the chains).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT
TPCOMM_CHAIN_SEEDS=3 timeout 400 $T --gtest_filter='Chain/LateRankChain.*wire*:Wire.*' >$OUT/chains.log 2>&1
echo "rc=$?"; grep -E 'chain    \]|^\[ *(FAILED|PASSED|  SKIPPED) |FAILED  \]' $OUT/chains.log | head -40
grep -m3 -A12 'Failure' $OUT/chains.log | head -50
