#!/bin/bash
# Twenty-fifth round, device call 1 (one H200, all ranks sharing it; not yet run: no device was
# lent this round). Verifies what this round and the last changed without a GPU:
#   * World/RowWorld.EveryAllReduceRowByName (new): every full-precision all-reduce row forced by
#     name at worlds 2, 4, 8;
#   * Wire.* and every wire chain (the push and host forms after the fused call's fix, 408db76);
#   * the fused suites (the fix's other side).
# Pack first: TPCOMM_NO_TRACE=1 scripts/gpu_pack.sh, then drop tpcomm-bench-fused and
# tpcomm-enqueue-cost from gpu-carry/pack/build/bench and re-tar (docs/bench/s24/README.md).
# Then docs/bench/s24/run_3.sh: the one-GPU Python test of all_reduce(wire=) and tune's wire step.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT
summary() { grep -E '^\[ *(FAILED|PASSED|SKIPPED) |FAILED  \]' "$1" | head -20; grep -m3 -A10 'Failure' "$1" | head -40; }
echo "== rows by name ($(date +%T))"
timeout 200 $T --gtest_filter='World/RowWorld.*' >$OUT/rows.log 2>&1
echo "rows rc=$?"; grep '^\[ row' $OUT/rows.log; summary $OUT/rows.log
echo "== wire ($(date +%T))"
timeout 120 $T --gtest_filter='Wire.*' >$OUT/wire.log 2>&1
echo "wire rc=$?"; summary $OUT/wire.log
echo "== wire chains ($(date +%T))"
TPCOMM_CHAIN_SEEDS=2 timeout 120 $T --gtest_filter='Chain/LateRankChain.*wire*' >$OUT/chains.log 2>&1
echo "chains rc=$?"; summary $OUT/chains.log
echo "== fused ($(date +%T))"
timeout 140 $T --gtest_filter='Fused.*:FusedPull.*:FusedTwoShotPush.*' >$OUT/fused.log 2>&1
echo "fused rc=$?"; summary $OUT/fused.log
echo "== done ($(date +%T))"
