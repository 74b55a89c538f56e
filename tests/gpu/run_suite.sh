#!/usr/bin/env bash
# The GPU suite in one command (run on a GPU machine, e.g. the lent H200s):
#   tests/gpu/run_suite.sh [BUILD_DIR] [OUT_DIR] [WHAT]
# WHAT (default all):
#   tests     the gtest GPU suite (correctness matrix, graphs, 100k calls, failures, multi-process,
#             multi-node), a PDL-off pass, an optional build without this GPU's architecture
#             (BUILD_DIR-sm80), the compute-sanitizer passes, then the Python GPU tests
#   tests-a   the gtest suites World/* only (every algorithm at worlds 2..8, ranks sharing GPUs:
#             about two thirds of the suite's time on one GPU)
#   tests-b   every other gtest suite but the chains and the soak, and the Python GPU tests
#   chains    chains of calls that switch sizes while one rank runs late (Chain/*: every
#             algorithm forced and auto, worlds 2..8, all-reduce alone and mixed with the fused
#             call, reduce-scatter and all-gather; auto again over host memory), and the soak at
#             its default length (tests-a + tests-b + chains = the suite)
#   soak      TPCOMM_SOAK_CALLS (default 1000000) calls with late ranks and size switches at
#             worlds 2, 4 and 8 (Soak.*), calls per second in soak.log
#   suites    the gtest suites whose names match the regex TPCOMM_SUITES (e.g. '^World/Shared')
#   sanitize  the compute-sanitizer passes and the PDL-off pass alone
#   bench     tpcomm-bench next to NCCL (sizes 1K..64M, knob sweeps, host transport)
#   round     this round's side-by-side rows: every forced variant, reduce-scatter / all-gather,
#             the fused call (and BUILD_DIR-ab's, alternating), kernel traces (BUILD_DIR-trace)
#   quick     gtest + bench
#   all       tests + bench
# The gtest suites run in batches of four test suites, each a process of its own: a crash or a
# hang costs its batch, which then reruns suite by suite. TPCOMM_SUITE_SECONDS bounds the whole run
# (the lent device allows 600 s a call: scripts/gpu_pack.sh says how to split a session); a step
# that no longer fits is reported NOT RUN, by name. Logs and JSON go to OUT_DIR (TPCOMM_SUITE_PACK=1:
# into OUT_DIR/suite.tgz beside summary.txt); the last lines are a summary.
set -u
BUILD=${1:-build}
OUT=${2:-gpu-results}
WHAT=${3:-all}
mkdir -p "$OUT"
# NVLink multicast stays off (it can take a shared host down); tpcomm never uses it.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
BUDGET=${TPCOMM_SUITE_SECONDS:-100000}
T0=$SECONDS
left() { echo $((BUDGET - (SECONDS - T0))); }
summary=()
step() {  # step NAME TIMEOUT_S CMD...: runs CMD, logs to OUT/NAME.log, records pass/fail
  local name=$1 t=$2; shift 2
  local start=$SECONDS
  [[ $t -gt $(left) ]] && t=$(left)
  if [[ $t -le 5 ]]; then
    summary+=("$(printf '%-28s NOT RUN (out of time)  %s' "$name" "$*" | cut -c1-200)")
    return 0
  fi
  echo "=== $name: $*" >&2
  timeout --kill-after=10 "$t" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-28s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - start))" \
    "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?|tests? ran|[0-9]+ (passed|failed)' \
      "$OUT/$name.log" | tr '\n' ' ' | cut -c1-150)")")
  # What failed, by name, and where a crash or a timeout stopped it.
  while read -r line; do summary+=("    $line"); done < <(
    grep -E '^\[  FAILED  \] [A-Za-z].*\([0-9]+ ms\)$|^(FAILED|ERROR) ' "$OUT/$name.log" | head -20)
  local last
  last=$(grep -E '^\[ RUN      \]' "$OUT/$name.log" | tail -1)
  if [[ $rc -gt 1 && -n $last ]]; then summary+=("    last started: $last"); fi
  tail -n 3 "$OUT/$name.log" >&2
  return $rc
}
TESTS=$BUILD/tests/gpu/tpcomm_gpu_tests
gtest_suites() {  # gtest_suites GREP_ARGS...: the suites in batches, each batch a process
  local suites part filter i rc
  mapfile -t suites < <("$TESTS" --gtest_list_tests | grep -E '^[^ ]' | sed 's/\.$//' | grep "$@")
  for ((i = 0; i < ${#suites[@]}; i += 4)); do
    part=("${suites[@]:i:4}")
    filter=$(printf '%s.*:' "${part[@]}")
    step "gtest_$((i / 4))_${part[0]//\//_}" 400 "$TESTS" --gtest_filter="${filter%:}" \
      --gtest_output="json:$OUT/gtest_$((i / 4)).json"
    rc=$?
    if [[ $rc -gt 1 && ${#part[@]} -gt 1 ]]; then
      for s in "${part[@]}"; do step "gtest_suite_${s//\//_}" 300 "$TESTS" --gtest_filter="$s.*"; done
    fi
  done
}
python_gpu() {
  step pytest_gpu 180 env TPCOMM_LIBRARY="$BUILD/src/libtpcomm.so" TPCOMM_CLI="$BUILD/tools/tpcomm" \
    PYTHONPATH="$(dirname "$0")/../../python" PYTHONUNBUFFERED=1 python3 -m pytest \
    "$(dirname "$0")/../../python/tests" -q -m gpu -rA -p no:cacheprovider
}

nvidia-smi topo -m >"$OUT/topo.txt" 2>&1
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,clocks.sm,clocks.mem --format=csv \
  >>"$OUT/topo.txt" 2>&1

case $WHAT in
  all | tests | quick) gtest_suites -v '^$' ;;
  tests-a) gtest_suites '^World/' ;;
  tests-b) gtest_suites -v -E '^(World|Chain)/|^Soak$' ;;
  suites) gtest_suites -E "${TPCOMM_SUITES:?suites: set TPCOMM_SUITES to a regex of suite names}" ;;
esac
if [[ $WHAT == all || $WHAT == tests || $WHAT == chains ]]; then
  [[ $WHAT == chains ]] && gtest_suites -E '^(Chain/|Soak$)'
  # Auto over host memory (the transport is read from the environment once per process).
  step chains_host 300 env TPCOMM_TRANSPORT=host "$TESTS" --gtest_filter='Chain/*auto*'
fi
if [[ $WHAT == soak ]]; then
  step soak 590 env TPCOMM_SOAK_CALLS="${TPCOMM_SOAK_CALLS:-1000000}" "$TESTS" --gtest_filter='Soak.*'
  grep -h 'soak     ' "$OUT/soak.log" | sed 's/^/    /' >"$OUT/soak_rates.txt"
  while read -r line; do summary+=("$line"); done <"$OUT/soak_rates.txt"
fi
if [[ $WHAT == all || $WHAT == tests || $WHAT == sanitize ]]; then
  # The sanitizers slow kernels many times over: ranks sharing a GPU need longer waits (harness.cc).
  export TPCOMM_TEST_TIMEOUT_SCALE=${TPCOMM_TEST_TIMEOUT_SCALE:-10}
  # Under memcheck (and synccheck) the world-8 island kernels of ranks sharing the GPU never all
  # start, with or without PDL, while 16 waiting grids of 4 x 512 threads do (ConcurrencyProbe)
  # and the same test passes without the tool: the tool's limit, not the co-residency rule
  # (docs/BENCHMARKS.md, "Seventeenth round"). The sanitizer steps run worlds up to 4.
  export TPCOMM_TEST_MAX_WORLD=${TPCOMM_TEST_MAX_WORLD:-4}
  step gtest_pdl_off 90 env TPCOMM_PDL=0 "$BUILD/tests/gpu/tpcomm_gpu_tests" \
    --gtest_filter='Correctness.World2Auto:Graph.*:Correctness.SentinelPayloadAndNegativeZero'
  for extra in "$BUILD"-sm80; do  # a build without this GPU's architecture
    [[ -x $extra/tests/gpu/tpcomm_gpu_tests ]] &&
      step arch_no_image 30 env TPCOMM_EXPECT_NO_IMAGE=1 "$extra/tests/gpu/tpcomm_gpu_tests" \
        --gtest_filter='Arch.*'
  done
  if command -v compute-sanitizer >/dev/null; then  # memory errors and races in the kernels
    # How many kernels that wait for each other the tools run at once: ranks sharing the GPU need
    # every rank's kernel resident (docs/PROTOCOL.md, "Ranks sharing a GPU").
    for tool in memcheck synccheck; do
      step "sanitizer_probe_$tool" 120 compute-sanitizer --tool "$tool" --error-exitcode 9 \
        --report-api-errors no "$BUILD/tests/gpu/tpcomm_gpu_tests" \
        --gtest_filter='ConcurrencyProbe.*'
      while read -r line; do summary+=("    $tool: $line"); done < <(
        grep -h 'probe    ' "$OUT/sanitizer_probe_$tool.log")
    done
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
    # The fused kernels: the cluster kernel's row sums (st.async into every block's shared memory,
    # an mbarrier per block: synccheck's default table of tracked barriers overflows on them and
    # fails the launch; 100000 passed in the sixteenth round, 4000000 did not) and a block per row.
    for tool in memcheck racecheck "synccheck --num-cuda-barriers 100000"; do
      step "sanitizer_fused_${tool%% *}" 120 compute-sanitizer --tool $tool --error-exitcode 9 \
        --report-api-errors no "$BUILD/tests/gpu/tpcomm_gpu_tests" \
        --gtest_filter='Fused.ClusterSplitEdges:Fused.World2OneShot'
    done
    step sanitizer_host_fence_memcheck 120 env TPCOMM_KNOBS=host_fence=1 compute-sanitizer \
      --tool memcheck --error-exitcode 9 --report-api-errors no \
      "$BUILD/tests/gpu/tpcomm_gpu_tests" --gtest_filter='Correctness.HostSentinelAndLLAlternate'

    # The chunked kernels (two-shot, island; src/kernels/layout/chunk_layout.h): every size of the
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
if [[ $WHAT == all || $WHAT == tests || $WHAT == tests-b ]]; then
  python_gpu
  step doctor 60 "$BUILD/tools/tpcomm" doctor
  step doctor_json 60 "$BUILD/tools/tpcomm" doctor --json
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
if [[ $WHAT == round ]]; then
  # This round's variants side by side in one process each (ranks sharing the lent GPU where only
  # one is lent: protocol and launch overhead, not a link), then the fused call of this build and
  # of BUILD_DIR-ab alternating (an A/B of two trees), then the kernel traces of BUILD_DIR-trace.
  B=$BUILD/bench/tpcomm-bench
  G=(--mode graph --min 1K --max 1M --factor 4)
  # Issue 21: push, flag pull, LL pull (pull_ll_bytes) and the copy engines, one process.
  step round_push_pull 150 "$B" --ranks 2 "${G[@]}" --backends \
    oneshot,oneshot_pull,oneshot_pull@pull_ll_bytes=65536,oneshot_pull@pull_ll_bytes=0,twoshot,twoshot_pull,oneshot_ce
  # The island over pull against the push island and the flat two-shot pull (islands of 2 and 4).
  for n in 4 8; do
    step "round_island_$n" 120 "$B" --ranks "$n" --mode graph --min 1K --max 4M --factor 4 \
      --backends island,island_pull,twoshot_pull
  done
  # Issue 24: the two-shot halves over push and over pull.
  for coll in reduce_scatter all_gather; do
    step "round_$coll" 90 "$B" --ranks 2 --collective "$coll" --mode graph --min 1K --max 4M \
      --factor 4 --backends twoshot,twoshot_pull
  done
  for r in 1 2; do
    step "round_fused_$r" 60 "$BUILD/bench/tpcomm-bench-fused" --ranks 2 --json "$OUT/fused_$r.json"
    if [[ -x $BUILD-ab/bench/tpcomm-bench-fused ]]; then
      step "round_fused_ab_$r" 60 "$BUILD-ab/bench/tpcomm-bench-fused" --ranks 2 \
        --json "$OUT/fused_ab_$r.json"
    fi
  done
  if [[ -x $BUILD-trace/bench/trace-oneshot ]]; then
    for m in "14336 oneshot 2" "14336 fused 2" "14336 fused_block 2" "229376 fused_block 2"; do
      read -r bytes mode ranks <<<"$m"
      step "round_trace_${mode}_$bytes" 30 "$BUILD-trace/bench/trace-oneshot" "$bytes" 1000 "$mode" "$ranks"
    done
  fi
fi
{
  echo
  echo "==== summary of $WHAT ($(date -u +%FT%TZ), $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs), $((SECONDS - T0)) s)"
  printf '%s\n' "${summary[@]}"
} | tee "$OUT/summary.txt"
# The lent device returns only a few files a call: TPCOMM_SUITE_PACK=1 leaves summary.txt and one
# archive of everything else.
if [[ ${TPCOMM_SUITE_PACK:-0} == 1 ]]; then
  (cd "$OUT" && find . -mindepth 1 -maxdepth 1 ! -name summary.txt ! -name suite.tgz -print0 |
    tar --null -czf suite.tgz -T - --remove-files)
fi
