#!/bin/bash
# Eighteenth round, device call C: the lean one-shots' single store site (A/B against c3872df,
# before poisoning), chains and poisoning on the changed kernels, host_fence auto on this driver.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=gpu-carry/pack/build; A=gpu-carry/pack/build-ab; T=$B/tests/gpu/tpcomm_gpu_tests
nvidia-smi -L; cat $B/COMMIT $A/COMMIT
{ ls -l /proc/driver/nvidia/params; grep -iE 'relax|RegistryDwords' /proc/driver/nvidia/params; } >$OUT/driver.txt 2>&1
cat $OUT/driver.txt
G="--ranks 2 --mode graph --min 1K --max 1M --factor 4 --backends oneshot,oneshot_pull --iters 100 --reps 7 --no-check"
for r in 1 2 3; do
  for v in old:$A/bench/tpcomm-bench new:$B/bench/tpcomm-bench; do
    echo "== round $r ${v%%:*}"; timeout 45 ${v#*:} $G 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ '
  done
done >$OUT/ab.txt 2>&1
cat $OUT/ab.txt
timeout 150 $T --gtest_filter='Poison*:Failure.*:Deadline*:HostSentinel.*' >$OUT/poison.log 2>&1
grep -E '^\[ *(FAILED|PASSED) |tests? ran|host_fence \]' $OUT/poison.log | tail -20
timeout 170 $T --gtest_filter='Fused.MixedAlignment*:Fused.World2*:Fused.GraphReplay*' >$OUT/fused.log 2>&1
grep -E '^\[ *(FAILED|PASSED|       OK) |tests? ran|Failure|differ' $OUT/fused.log | head -20
TPCOMM_DEBUG=INFO TPCOMM_TRANSPORT=host timeout 30 $B/tools/tpcomm doctor >$OUT/doctor.txt 2>&1; grep -iE 'fence|driver' $OUT/doctor.txt | head
cd $OUT && tar czf logs.tgz poison.log fused.log && rm -f poison.log fused.log
