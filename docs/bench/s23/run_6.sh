#!/bin/bash
# Twenty-third round, device call 7 (one H200, all ranks sharing it): Poison.* with the quantized
# wire's cases (INT8 in many steps, FP8 over fp32) and the fused island over pushes (one step,
# many in FP8): a dead rank makes the call a timeout on the others and their outputs NaN.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT
timeout 400 $T --gtest_filter='Poison.AllReduceEveryAlgorithm:Poison.FusedAddRmsNorm' >$OUT/poison.log 2>&1
echo "poison rc=$?"; grep -E 'poison   \].*(wire|island)|^\[ *(FAILED|PASSED|  SKIPPED) |FAILED  \]' $OUT/poison.log | head -20
grep -m3 -B2 -A8 'Failure' $OUT/poison.log | head -40
