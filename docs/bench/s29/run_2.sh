#!/bin/bash
# Twenty-ninth round, prepared for the next device call (one H200, all ranks sharing it); the round's
# device time ran out before it could run:
#   * Fused.EveryFusedRowByName (new in c2b5877: every fused row forced by name at worlds 2 and 4,
#     1, 16 and 128 rows), World/RowWorld.EveryAllReduceRowByName (the forced-variant search's
#     option set changed in 7d17798), the fused suites;
#   * tpcomm-bench-fused at world 4 with variant=fused_p2p_oneshot_pull, which refused 128 tokens
#     before 7d17798 and printed a row of zeros for it before 605b22d.
# Pack: TPCOMM_NO_TRACE=1 scripts/gpu_pack.sh at the tree's HEAD, then
#   run(command="bash docs/bench/s29/run_2.sh", carry=["gpu-carry/pack.tar.xz"]).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rm -rf gpu-carry/pack && tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build
nvidia-smi -L; cat $B/COMMIT
echo "== tests ($(date +%T))"
timeout 420 $B/tests/gpu/tpcomm_gpu_tests \
  --gtest_filter='Fused.*:FusedPull.*:FusedTwoShotPull.*:FusedTwoShotPush.*:FusedIsland.*:World/RowWorld.*' \
  >$OUT/tests.log 2>&1
echo "tests rc=$?"
grep -E '^\[ *(PASSED|FAILED|SKIPPED) *\]|fused row\]|\[ row ' $OUT/tests.log | head -80
echo "== tpcomm-bench-fused, forced fused_p2p_oneshot_pull ($(date +%T))"
TPCOMM_KNOBS=variant=fused_p2p_oneshot_pull timeout 60 $B/bench/tpcomm-bench-fused --ranks 4 \
  --tokens 1,16,128 --json $OUT/fused_oneshot_pull.json 2>&1 | tee $OUT/fused_oneshot_pull.txt
echo "== done ($(date +%T))"
