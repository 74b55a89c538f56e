#!/bin/bash
# Twenty-third round, device call 3 (one H200, all ranks sharing it): the quantized wire's first
# kernel (twoshot_pull_wire.cu) and the fused pull LL wire on by default.
# 1. The wire's gtests (Wire.*: every codec at worlds 2..8, the host emulation's bits, the bound,
#    NaN/Inf, graphs) and compute-sanitizer memcheck / racecheck on its NaN test (world 4).
# 2. tpcomm-bench, graphs, bf16, 1..64 MiB, worlds 2, 4, 8: the two-shot pull against itself over
#    each codec (TPCOMM_ALGO-style backends with the wire knob; --no-check: the codec is not the
#    bench's tolerance, the gtests check it). On one GPU the link is not the limit: this is the
#    codec's compute cost, not its bandwidth gain.
# 3. The late-rank chains of oneshot_pull and auto mixed with fused calls (the LL fused wire now
#    the default), and FusedPull.* / Mismatch* again.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT
echo "== wire gtests ($(date +%T))"
timeout 240 $T --gtest_filter='Wire.*' >$OUT/wire_gtests.log 2>&1
echo "wire rc=$?"; grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |FAILED  \]|wire     \]' $OUT/wire_gtests.log | head -40
grep -m5 -B2 -A6 'Failure' $OUT/wire_gtests.log | head -60
echo "== sanitizers ($(date +%T))"
for tool in memcheck racecheck; do
  TPCOMM_PDL=0 timeout 90 compute-sanitizer --tool $tool --error-exitcode 99 $T \
    --gtest_filter='Wire.ANonFiniteInputMakesItsGroupNaN' >$OUT/san_$tool.log 2>&1
  echo "$tool rc=$?"; grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/san_$tool.log | head -4
done
echo "== wire bench ($(date +%T))"
W=wire_min_bytes=0
for w in 2 4 8; do
  timeout 90 $B/bench/tpcomm-bench --ranks $w --min 1M --max 64M --factor 4 --mode graph \
    --no-check --backends "twoshot_pull,twoshot_pull@wire=int8+$W,twoshot_pull@wire=int4+$W,twoshot_pull@wire=fp8+$W" \
    >$OUT/wire_bench_w$w.txt 2>&1
  echo "bench w$w rc=$?"; tail -8 $OUT/wire_bench_w$w.txt
done
echo "== fused pull + chains ($(date +%T))"
timeout 100 $T --gtest_filter='FusedPull.*:MismatchPullLL.*:Algo/Mismatch.oneshot_pull' >$OUT/fused.log 2>&1
echo "fused rc=$?"; grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |FAILED  \]' $OUT/fused.log | head
TPCOMM_CHAIN_SEEDS=2 timeout $((575 - SECONDS)) $T \
  --gtest_filter='Chain/LateRankChain.*oneshot_pull_mixed*:Chain/LateRankChain.*auto_mixed*' \
  >$OUT/chains.log 2>&1
echo "chains rc=$?"; grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |FAILED  \]' $OUT/chains.log | head -20
echo "== done ($(date +%T))"
