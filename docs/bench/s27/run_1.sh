#!/bin/bash
# Twenty-seventh round, device call 1 (one H200, all ranks sharing it): correctness after the
# round's kernel changes (every kernel's signature: DeviceComm's per-launch fields moved to the
# LaunchParams argument; the eight long kernels split into functions):
#   * World/* (every algorithm forced at worlds 2..8, every all-reduce row by name);
#   * the chains stage (late ranks, sizes and algorithms switching, fused calls and the halves
#     mixed in, every algorithm forced and auto; auto over host memory; the soak).
# Pack first (README.md here): TPCOMM_NO_TRACE=1 TPCOMM_AB_TREE=<a checkout of a726197, the
# round's base, built with the dev preset> scripts/gpu_pack.sh; then
#   run(command="bash docs/bench/s27/run_1.sh", carry=["gpu-carry/pack.tar.xz"]).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rm -rf gpu-carry/pack && tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build
nvidia-smi -L; cat $B/COMMIT
echo "== World/* ($(date +%T))"
mkdir -p $OUT/world $OUT/chains
TPCOMM_SUITE_SECONDS=270 TPCOMM_SUITE_PACK=1 tests/gpu/run_suite.sh $B $OUT/world tests-a 2>&1 | tail -8
echo "== chains ($(date +%T))"
TPCOMM_SUITE_SECONDS=290 TPCOMM_SUITE_PACK=1 tests/gpu/run_suite.sh $B $OUT/chains chains 2>&1 | tail -8
echo "== done ($(date +%T))"
