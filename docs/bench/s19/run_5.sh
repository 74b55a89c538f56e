#!/bin/bash
# Nineteenth round, device call 5 (one H200, all ranks sharing it), short: the host paths 39e35d0
# changed (the copy engines' launch by the row's transport, the occupancy query over every
# cluster kernel, the fused rule's LL question): the copy-engine chains and tests, the fused and
# fused pull tests, the epilogue's cluster test.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
cat $B/COMMIT
timeout 100 $T --gtest_filter='Chain/*oneshot_ce*:OneShotCe*:FusedPull.World2LLAndFlag:FusedPull.EveryPathGivesTheSameBits:Fused.World2OneShot:AddRmsNorm.ClusterPerRow' >$OUT/call5.log 2>&1
echo "rc=$?"; grep -E '^\[ *(FAILED|PASSED|SKIPPED) |tests? ran' $OUT/call5.log | head -20
grep -cE '^\[       OK \]' $OUT/call5.log
