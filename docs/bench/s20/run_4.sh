#!/bin/bash
# Twentieth round, device call 4 (one H200, all ranks sharing it): after the epilogue kernel's
# cluster path went (fd90cb6), the epilogue, fused and every-path tests; then where the
# all-reduce pushes (auto), the fused push one-shot and the unfused pair against the fused
# two-shot over pull forced by name, worlds 2, 4, 8, 16-1024 rows of 7168 bf16: whether the
# two-shot should be taken where the all-reduce pushes too.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests; F=$B/bench/tpcomm-bench-fused
nvidia-smi -L; cat $B/COMMIT
timeout 150 $T --gtest_filter='AddRmsNorm*:Fused.*:FusedPull.EveryPath*' >$OUT/epilogue.log 2>&1; echo "tests rc=$?"
grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |Failure' $OUT/epilogue.log | head
for w in 2 4 8; do
  for k in "" variant=fused_p2p_twoshot_pull; do
    echo "-- world $w H=7168 auto ${k:-default}"
    TPCOMM_KNOBS=$k timeout 60 $F --ranks $w --tokens 16,64,128,256,512,1024 2>&1 | tail -8
  done
done >$OUT/bench_push.txt 2>&1
cat $OUT/bench_push.txt
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
