#!/bin/bash
# Twenty-fourth round, device call 1 (one H200, all ranks sharing it): the quantized wire's push
# and host forms and the call's own codec. Wire.* (every form x codec x world 2..8), the wire
# chains (push and host forms new), Poison's all-reduce cases, the one-GPU Python test
# (all_reduce(wire=)), then compute-sanitizer memcheck and racecheck on the push and host forms.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=$PWD/gpu-carry/pack/build; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT
echo "== wire gtests ($(date +%T))"
timeout 240 $T --gtest_filter='Wire.*' >$OUT/wire_gtests.log 2>&1
echo "wire rc=$?"; grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |FAILED  \]|OK \]' $OUT/wire_gtests.log | head -12
grep -m5 -B2 -A8 'Failure' $OUT/wire_gtests.log | head -50
echo "== chains + poison ($(date +%T))"
TPCOMM_CHAIN_SEEDS=2 timeout 150 $T \
  --gtest_filter='Chain/LateRankChain.*wire*:Poison.AllReduceEveryAlgorithm' >$OUT/chains.log 2>&1
echo "chains rc=$?"; grep -E '^\[ *(FAILED|PASSED|  SKIPPED) |FAILED  \]|poison   \].*wire|OK \].*wire' $OUT/chains.log | head -30
grep -m3 -A12 'Failure' $OUT/chains.log | head -40
echo "== python one GPU ($(date +%T))"
TPCOMM_LIBRARY=$B/src/libtpcomm.so PYTHONPATH=$PWD/python timeout 90 python3 -m pytest \
  python/tests/test_gpu_one_gpu.py -q -x >$OUT/python.log 2>&1
echo "python rc=$?"; tail -15 $OUT/python.log
echo "== sanitizers ($(date +%T))"
for tool in memcheck racecheck; do
  TPCOMM_KNOBS=pdl=0 timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $T \
    --gtest_filter='Wire.GraphReplay' >$OUT/san_$tool.log 2>&1
  echo "$tool rc=$?"; grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/san_$tool.log | head -5
done
echo "== done ($(date +%T))"
