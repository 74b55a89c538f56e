#!/usr/bin/env bash
# Fuzzes the parsers: run.sh BUILD_DIR SECONDS [TARGET...] runs each libFuzzer target of a
# TPCOMM_FUZZ=ON build (cmake/Fuzz.cmake) for SECONDS on its seed corpus (corpus/<target>/ and the
# CPU tests' data), printing the command it ran and libFuzzer's totals. SECONDS=0 only replays the
# seeds (ctest -L fuzz). New inputs go to a scratch folder, so the corpus in the repository stays
# as it is; a crash, a sanitizer report, a broken property or an input slower than 10 s fails the
# run, and the input is kept in BUILD_DIR/fuzz-artifacts/ (add it to the corpus with the fix).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cpu_data="$here/../cpu/data"
build=${1:?usage: run.sh BUILD_DIR SECONDS [TARGET...]}
seconds=${2:?usage: run.sh BUILD_DIR SECONDS [TARGET...]}
shift 2
targets=("$@")
((${#targets[@]})) || targets=(inspect_file fatbin cubin_elf json tuning_table p2p_cache topology)

seeds_of() {  # the seed folders of a target, one a line, its own first
  local c="$here/corpus"
  case $1 in
    json) printf '%s\n' "$c/json" "$c/tuning_table" "$c/p2p_cache" "$c/topology" "$cpu_data/topo" ;;
    topology) printf '%s\n' "$c/topology" "$cpu_data/topo" ;;
    *) printf '%s\n' "$c/$1" ;;
  esac
}
dict_of() {
  case $1 in
    inspect_file | fatbin | cubin_elf) echo "$here/elf.dict" ;;
    *) echo "$here/json.dict" ;;
  esac
}

artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failed=()
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/tpcomm_fuzz_$t"
  [[ -x $bin ]] || { echo "run.sh: $bin is missing (cmake --build $build --target tpcomm_fuzzers)"; exit 2; }
  mkdir -p "$scratch/$t"
  if ((seconds > 0)); then limit=(-max_total_time="$seconds"); else limit=(-runs=0); fi
  mapfile -t seeds < <(seeds_of "$t")
  cmd=("$bin" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
       -dict="$(dict_of "$t")" -artifact_prefix="$artifacts/$t-" "$scratch/$t" "${seeds[@]}")
  echo "-- $t: ${cmd[*]}"
  log="$scratch/$t.log"
  if "${cmd[@]}" >"$log" 2>&1; then
    stat() { sed -n "s/^stat::$1: *//p" "$log"; }
    cov() { sed -n "s/.*$1 *cov: \([0-9]*\).*/\1/p" "$log" | tail -n 1; }
    if ((seconds > 0)); then
      echo "   ok: $(stat number_of_executed_units) inputs in ${seconds} s" \
           "($(stat average_exec_per_sec)/s, slowest $(stat slowest_unit_time_sec) s)," \
           "coverage $(cov INITED) -> $(cov DONE) edges, $(stat new_units_added) new inputs" \
           "(not kept), no finding"
    else
      echo "   ok: $(stat number_of_executed_units) seed inputs replayed, coverage $(cov INITED) edges"
    fi
  else
    tail -n 60 "$log"
    echo "   FAILED: $t (the input is in $artifacts/)"
    failed+=("$t")
  fi
done
if ((${#failed[@]})); then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#targets[@]} target(s) ok"
