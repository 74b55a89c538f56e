#!/usr/bin/env bash
# Checks scripts/sass_diff.sh on tiny kernels built here with nvcc (no GPU needed): the same code
# from two files (anonymous namespaces carry per-file tags) is identical; changed code, a kernel
# only one side has, and a rename it is told about are each reported as such.
#   sass_diff_test.sh NVCC WORKDIR
set -euo pipefail
nvcc=$1
work=$2
diff_script="$(cd "$(dirname "$0")/../.." && pwd)/scripts/sass_diff.sh"
rm -rf "$work" && mkdir -p "$work"/{a,b,c,d,e}
cd "$work"

kernel() {  # kernel FILE NAME VALUE: a kernel NAME in an anonymous namespace storing VALUE
  cat >"$1" <<CU
namespace {
__global__ void $2(int* p) { *p = $3; }
}
const void* entry_$(basename "$1" .cu)() { return reinterpret_cast<const void*>(&$2); }
CU
}
build() {  # build DIR FILE...
  local dir=$1
  shift
  for f in "$@"; do
    "$nvcc" -cubin -gencode arch=compute_80,code=sm_80 "$f" -o "$dir/$(basename "$f" .cu).cubin"
  done
}
kernel one.cu store 1
kernel other.cu store 1  # the same kernel from another file: another anonymous-namespace tag
kernel two.cu store 2
kernel extra.cu more 3
kernel renamed.cu stored 1
build a one.cu
build b other.cu
build c two.cu
build d other.cu extra.cu
build e renamed.cu

fail() {
  echo "FAIL: $*"
  exit 1
}
expect() {  # expect STATUS PATTERN ARGS...: sass_diff's exit status and a line of its output
  local want=$1 pattern=$2
  shift 2
  local out status=0
  out=$("$diff_script" "$@" 2>&1) || status=$?
  echo "$out"
  [[ $status == "$want" ]] || fail "sass_diff $* exited $status, not $want"
  grep -q -- "$pattern" <<<"$out" || fail "sass_diff $* did not say '$pattern'"
}
expect 0 "1 kernels, all identical" a b
expect 1 "DIFFERS .*store(int\*)" a c
expect 1 "ONLY IN NEW .*more(int\*)" a d
expect 1 "ONLY IN NEW .*stored(int\*)" a e
expect 0 "1 kernels, all identical" --rename '::store\(' '::stored(' a e
echo "sass_diff_test: 5 passed, 0 failed"
