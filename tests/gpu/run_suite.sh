#!/usr/bin/env bash
# The GPU suite in one command (run on a GPU machine, e.g. the lent H200s):
#   tests/gpu/run_suite.sh [BUILD_DIR] [OUT_DIR] [all|tests|bench|quick]
# Runs the gtest GPU suite (correctness matrix, graphs, 100k calls, failures, multi-process),
# a PDL-off pass, optional extra builds (an sm_80-only build must fail init clearly on sm_90),
# and tpcomm-bench next to NCCL. Logs and JSON go to OUT_DIR; the last lines are a summary.
set -u
BUILD=${1:-build}
OUT=${2:-gpu-results}
WHAT=${3:-all}
mkdir -p "$OUT"
# NVLink multicast stays off (it can take a shared host down); tpcomm never uses it.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
summary=()
step() {  # step NAME TIMEOUT_S CMD...: runs CMD, logs to OUT/NAME.log, records pass/fail
  local name=$1 t=$2; shift 2
  local start=$SECONDS
  echo "=== $name: $*" >&2
  timeout --kill-after=10 "$t" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-28s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - start))" \
    "$(grep -E '^\[  (PASSED|FAILED)  \]|tests? ran|FAILED TEST' "$OUT/$name.log" | tr '\n' ' ' | cut -c1-150)")")
  tail -n 3 "$OUT/$name.log" >&2
  return $rc
}

nvidia-smi topo -m >"$OUT/topo.txt" 2>&1
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,clocks.sm,clocks.mem --format=csv \
  >>"$OUT/topo.txt" 2>&1

if [[ $WHAT == all || $WHAT == tests || $WHAT == quick ]]; then
  step gtest 600 "$BUILD/tests/gpu/tpcomm_gpu_tests" --gtest_output="json:$OUT/gtest.json"
fi
if [[ $WHAT == all || $WHAT == tests ]]; then
  step gtest_pdl_off 90 env TPCOMM_PDL=0 "$BUILD/tests/gpu/tpcomm_gpu_tests" \
    --gtest_filter='Correctness.World2Auto:Graph.*:Correctness.SentinelPayloadAndNegativeZero'
  for extra in "$BUILD"-sm80; do  # a build without this GPU's architecture
    [[ -x $extra/tests/gpu/tpcomm_gpu_tests ]] &&
      step arch_no_image 30 env TPCOMM_EXPECT_NO_IMAGE=1 "$extra/tests/gpu/tpcomm_gpu_tests" \
        --gtest_filter='Arch.*'
  done
  if command -v compute-sanitizer >/dev/null; then  # memory errors and races in the kernels
    for tool in ${TPCOMM_SANITIZERS:-memcheck racecheck synccheck}; do
      step "sanitizer_$tool" 120 compute-sanitizer --tool "$tool" --error-exitcode 9 --report-api-errors no \
        "$BUILD/tests/gpu/tpcomm_gpu_tests" \
        --gtest_filter='Correctness.SentinelPayloadAndNegativeZero:Stats.*:Failure.BadArguments*'
    done
    # The LL protocol's half-split entries over host memory, blocks straddling ranks' regions.
    step sanitizer_ll_memcheck 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
      --report-api-errors no "$BUILD/tests/gpu/tpcomm_gpu_tests" \
      --gtest_filter='Correctness.HostLLBlocksAcrossRegions'
    # The host sentinel protocol (docs/PROTOCOL.md, "The host sentinel's clears"): the host
    # one-shot switching between it and LL by size (lean and general kernels), and a late clear
    # turned into a timeout (the timeout and abort path); then the same calls with the fence
    # after the clears (host_fence=1).
    for tool in memcheck racecheck synccheck; do
      step "sanitizer_host_sentinel_$tool" 120 compute-sanitizer --tool "$tool" --error-exitcode 9 \
        --report-api-errors no "$BUILD/tests/gpu/tpcomm_gpu_tests" \
        --gtest_filter='Correctness.HostSentinelAndLLAlternate:HostSentinel.LateClearIsATimeoutNotData'
    done
    step sanitizer_host_fence_memcheck 120 env TPCOMM_KNOBS=host_fence=1 compute-sanitizer \
      --tool memcheck --error-exitcode 9 --report-api-errors no \
      "$BUILD/tests/gpu/tpcomm_gpu_tests" --gtest_filter='Correctness.HostSentinelAndLLAlternate'

    # The chunked kernels (two-shot, island; src/kernels/chunk_layout.h): every size of the
    # matrix through a 3-block two-shot, and the island kernels (push and pull) at world 4 (ranks
    # sharing GPUs).
    step sanitizer_chunked_memcheck 300 compute-sanitizer --tool memcheck --error-exitcode 9 \
      --report-api-errors no "$BUILD/tests/gpu/tpcomm_gpu_tests" \
      --gtest_filter='Correctness.World2TwoShotSmallGrid:World/IslandWorld.FullMatrix/0:World/IslandPullWorld.FullMatrix/0'

    # The bulk host protocol's split path: named barriers, the flag barrier, the outbox rotation.
    for tool in racecheck synccheck; do
      step "sanitizer_bulk_$tool" 120 compute-sanitizer --tool "$tool" --error-exitcode 9 \
        --report-api-errors no "$BUILD/tests/gpu/tpcomm_gpu_tests" \
        --gtest_filter='Correctness.HostBulkSplitSteps'
    done
  fi
fi
if [[ $WHAT == all || $WHAT == bench || $WHAT == quick ]]; then
  step bench 300 "$BUILD/bench/tpcomm-bench" --min 1K --max 64M --factor 4 \
    --json "$OUT/bench.json"
  step bench_knobs 240 "$BUILD/bench/tpcomm-bench" --backends auto,oneshot,twoshot,nccl \
    --sweep-knobs --mode graph --min 1K --max 64M --factor 4 --no-check \
    --json "$OUT/bench_knobs.json"
  # The host-memory transport against NCCL without P2P, as on a box where P2P does not work.
  step bench_host 240 env TPCOMM_TRANSPORT=host NCCL_P2P_DISABLE=1 "$BUILD/bench/tpcomm-bench" \
    --backends auto,host_oneshot,host_twoshot,host_bulk,nccl --mode graph --min 1K --max 64M \
    --factor 4 --json "$OUT/bench_host.json"
  step bench_host_knobs 240 env TPCOMM_TRANSPORT=host "$BUILD/bench/tpcomm-bench" \
    --backends host_oneshot,host_twoshot,host_bulk --sweep-knobs --mode graph --min 1K --max 4M \
    --factor 4 --no-check --json "$OUT/bench_host_knobs.json"
  step bench_nccl_p2p_off 120 env NCCL_P2P_DISABLE=1 "$BUILD/bench/tpcomm-bench" \
    --backends nccl --mode graph --min 1K --max 64M --factor 4 --json "$OUT/bench_nccl_p2p_off.json"
fi
echo
echo "==== summary ($(date -u +%FT%TZ), $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs))"
printf '%s\n' "${summary[@]}"
