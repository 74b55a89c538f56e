#!/bin/bash
# Twenty-first round, device call 3 (one H200, all ranks sharing it), on the round's last kernel
# code: the fused variants' tests after the shared matrix (runFusedMatrix), then the suite's
# chains stage (every late-rank chain, every algorithm forced and auto, worlds 2..8, all-reduce
# alone and mixed with fused calls, reduce-scatter and all-gather; auto over host memory) and the
# soak at its default length.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT
echo "== fused variants ($(date +%T))"
timeout 200 $T --gtest_filter='FusedIslandPull.*:FusedTwoShotPull.*:FusedTwoShotPush.*' >$OUT/fused.log 2>&1
echo "fused rc=$?"; grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |Failure|Which is|world=' $OUT/fused.log | head -30
echo "== chains ($(date +%T))"
TPCOMM_SUITE_SECONDS=330 TPCOMM_SUITE_PACK=1 tests/gpu/run_suite.sh $B $OUT/chains chains | tail -15
tar -xzf $OUT/chains/suite.tgz -O 2>/dev/null | grep -a 'chain    \]' | grep -c 'fused_p2p'
echo "== done ($(date +%T))"
