#!/bin/bash
# Twenty-third round, device calls 4 and 5 (one H200, all ranks sharing it): the quantized wire's
# kernel built per codec (a template each, the per-group factors; call 5: FP8 converted by sm_89+'s
# cvt instructions): Wire.* again (the GPU's codes against the host emulation's), and the bench of
# run_3.sh (graphs, bf16, 1..64 MiB, worlds 2, 4, 8; --no-check: the gtests check the codec).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT
echo "== wire gtests ($(date +%T))"
timeout 240 $T --gtest_filter='Wire.*' >$OUT/wire_gtests.log 2>&1
echo "wire rc=$?"; grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |FAILED  \]' $OUT/wire_gtests.log | head
grep -m5 -B2 -A6 'Failure' $OUT/wire_gtests.log | head -40
echo "== wire bench ($(date +%T))"
W=wire_min_bytes=0
for w in 2 4 8; do
  timeout 90 $B/bench/tpcomm-bench --ranks $w --min 1M --max 64M --factor 4 --mode graph \
    --no-check --backends "twoshot_pull,twoshot_pull@wire=int8+$W,twoshot_pull@wire=int4+$W,twoshot_pull@wire=fp8+$W" \
    >$OUT/wire_bench_w$w.txt 2>&1
  echo "bench w$w rc=$?"; tail -6 $OUT/wire_bench_w$w.txt | cut -c1-60,100-
done
echo "== done ($(date +%T))"
