#!/bin/bash
# Twentieth round, device call 6 (one H200, all ranks sharing it): the spanning communicator's
# calls through runCall (simulated machines: MultiNode.*), every poison case (broken
# communicators, dead peers, hung NCCL), the half collectives, the fused tests and the auto and
# pull chains mixed with fused calls.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT
g() { local n=$1 to=$2; shift 2
  timeout $to $T --gtest_filter="$1" >$OUT/$n.log 2>&1; echo "$n rc=$?"
  grep -cE '^\[       OK \]' $OUT/$n.log
  grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |Failure|Which is' $OUT/$n.log | head -12; }
g multinode 120 'MultiNode*.*'
g poison_half 150 'Poison.*:HalfCollectives*.*:Fused.*:FusedTwoShotPull.*'
g chains 150 'Chain/*auto_mixed*:Chain/*pull_mixed*'
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
