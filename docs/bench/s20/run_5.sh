#!/bin/bash
# Twentieth round, device call 5 (one H200, all ranks sharing it): the fused two-shot taken by
# auto where the all-reduce pushes (NVLink; one GPU counts as NVLink): the fused tests, the
# every-path bits, the late-rank chains of auto and the push algorithms mixed with fused calls
# (their 64+ row fused calls take it now), and the fused bench under auto at worlds 4 and 8.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests; F=$B/bench/tpcomm-bench-fused
nvidia-smi -L; cat $B/COMMIT
timeout 200 $T --gtest_filter='Fused.*:FusedTwoShotPull.*:FusedPull.EveryPath*:Poison.Fused*' >$OUT/fused.log 2>&1; echo "fused rc=$?"
grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |Failure|Which is' $OUT/fused.log | head -20
timeout 200 $T --gtest_filter='Chain/*auto_mixed*:Chain/*oneshot_mixed*:Chain/*twoshot_mixed*:Chain/*island_mixed*' >$OUT/chains.log 2>&1; echo "chains rc=$?"
grep -cE '^\[       OK \]' $OUT/chains.log; grep -E '^\[ *(FAILED|PASSED) |Failure' $OUT/chains.log | head
grep -h "chain    \]" $OUT/chains.log | grep -c fused_p2p_twoshot_pull
for w in 4 8; do echo "-- world $w auto"; timeout 60 $F --ranks $w --tokens 16,64,256,1024 2>&1 | tail -6; done
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
