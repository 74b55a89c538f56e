#!/bin/bash
# Session 13, GPU call 3: the tests that failed in call 2 (fixed), then the benchmarks of the round,
# two ranks sharing the one H200 (protocol and launch overhead, not a link).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
G=gpu-carry; N=$G/new; B=$G/bench; O=${OUT:-/tmp/out}; mkdir -p $O/b
s=$SECONDS
LD_LIBRARY_PATH=$PWD/$N timeout -k 5 200 $N/tpcomm_gpu_tests --gtest_filter='FabricProbeGpu.*:Fused.*:AddRmsNorm.*:World/SharedWorld.EveryAlgorithmDefaultGrids/*' > $O/gtest3.log 2>&1
echo "gtest rc=$? in $((SECONDS-s)) s"; grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $O/gtest3.log | tail -12
grep -E "^\[ fused|us per call" $O/gtest3.log | head -12
TPCOMM_LIBRARY=$PWD/$N/libtpcomm.so TPCOMM_CLI=$PWD/$N/tpcomm PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 timeout 120 python3 -m pytest python/tests -q -m gpu -p no:cacheprovider -s > $O/pytest_gpu.txt 2>&1
echo "pytest rc=$? at $((SECONDS-s)) s"; grep -E "passed|failed" $O/pytest_gpu.txt | tail -2; grep -E "^(FAILED|ERROR)" $O/pytest_gpu.txt | head -10
L="LD_LIBRARY_PATH=$PWD/$N"
run() { local f=$1; shift; env LD_LIBRARY_PATH=$PWD/$N timeout 60 "$@" > $O/b/$f.txt 2>&1; echo "== $f rc=$? at $((SECONDS-s)) s"; }
run push_pull $B/tpcomm-bench --ranks 2 --backends oneshot,oneshot_pull,twoshot,twoshot_pull,oneshot_ce --mode graph --min 1K --max 1M --factor 4
grep -E "^ +[0-9]" $O/b/push_pull.txt | head -8
run rsag_rs $B/tpcomm-bench --ranks 2 --collective reduce_scatter --backends auto --mode graph --min 1K --max 4M --factor 4
run rsag_ag $B/tpcomm-bench --ranks 2 --collective all_gather --backends auto --mode graph --min 1K --max 4M --factor 4
grep -E "^ +[0-9]" $O/b/rsag_rs.txt | head -4; grep -E "^ +[0-9]" $O/b/rsag_ag.txt | head -4
run fused $B/tpcomm-bench-fused --ranks 2
tail -14 $O/b/fused.txt
for b in old new; do D=$G/$b; [ $b = new ] && D=$N
  env LD_LIBRARY_PATH=$PWD/$D timeout 60 $B/tpcomm-enqueue-cost --streams $([ $b = old ] && echo 1 || echo 2) > $O/b/enq_$b.txt 2>&1
  env LD_LIBRARY_PATH=$PWD/$D TPCOMM_TRANSPORT=host timeout 60 $B/tpcomm-enqueue-cost --streams $([ $b = old ] && echo 1 || echo 2) > $O/b/enqh_$b.txt 2>&1
done; tail -n 4 $O/b/enq_old.txt $O/b/enq_new.txt $O/b/enqh_old.txt $O/b/enqh_new.txt
run doctor env LD_LIBRARY_PATH=$PWD/$N $N/tpcomm doctor
grep -iE "probe|verdict" $O/b/doctor.txt | head -8
echo "done at $((SECONDS-s)) s"
cd $O && tar czf b.tgz b && rm -rf b
