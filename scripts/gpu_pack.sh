#!/bin/bash
# Builds, on a machine without a GPU, what a session on the lent device runs, and packs it into
# gpu-carry/pack.tar.xz (the device tool carries at most 64 MiB; every binary links libtpcomm
# statically, ~15 MB each, so they travel stripped and xz -9 compressed: ~15-25 MiB). The pack holds
# build-shaped folders, so tests/gpu/run_suite.sh runs from it as from a build:
#   gpu-carry/pack/build        the dev build (sm_90): GPU tests, library, CLI, benches
#   gpu-carry/pack/build-trace  trace-oneshot and tpcomm-bench-fused of a -DTPCOMM_KERNEL_TRACE=ON build
#   gpu-carry/pack/build-ab     TPCOMM_AB_TREE's benches, for an A/B against this tree
# A session, one stage a device call (each within the device's 600 s):
#   P='tar -C gpu-carry -xJf gpu-carry/pack.tar.xz && TPCOMM_SUITE_SECONDS=540 TPCOMM_SUITE_PACK=1 tests/gpu/run_suite.sh gpu-carry/pack/build $OUT'
#   run(command="$P tests-a", carry=["gpu-carry/pack.tar.xz"])   # World/* suites
#   run(command="$P tests-b", carry=[...])                        # the other suites, Python, doctor
#   run(command="$P chains", carry=[...])                         # late-rank chains, every algorithm
#   run(command="$P soak", carry=[...])                           # 1M calls at worlds 2, 4 and 8
#   run(command="$P round", carry=[...])                          # this round's benchmarks
#   run(command="$P sanitize", carry=[...])                       # compute-sanitizer, PDL off
# Environment: TPCOMM_AB_TREE=/path/to/checkout (its build-dev is built and packed as build-ab),
# TPCOMM_NO_TRACE=1 (no trace build). gpu-carry/ is git-ignored (.git/info/exclude).
set -euo pipefail
cd "$(dirname "$0")/.."
ccache_flags=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
command -v ccache >/dev/null || ccache_flags=()
step() { echo "== $* ($(date +%T))"; }

step "dev build (sm_90) of $(git rev-parse --short HEAD)"
cmake --preset dev "${ccache_flags[@]}" >/dev/null
cmake --build build-dev -j"$(nproc)"
if [ -z "${TPCOMM_NO_TRACE:-}" ]; then
  step "kernel-trace build"
  cmake --preset dev -B build-trace -DTPCOMM_KERNEL_TRACE=ON "${ccache_flags[@]}" >/dev/null
  cmake --build build-trace -j"$(nproc)" --target trace_oneshot tpcomm_bench_fused
fi
if [ -n "${TPCOMM_AB_TREE:-}" ]; then
  step "A/B tree ${TPCOMM_AB_TREE}"
  (cd "$TPCOMM_AB_TREE" && cmake --preset dev "${ccache_flags[@]}" >/dev/null &&
    cmake --build build-dev -j"$(nproc)" --target tpcomm_bench tpcomm_bench_fused)
fi

step "packing"
P=gpu-carry/pack
rm -rf "$P" gpu-carry/pack.tar.xz
# pack FROM TO FILE...: FROM/FILE -> TO/FILE, the same relative path
pack() {
  local from=$1 to=$2 f
  shift 2
  for f in "$@"; do
    mkdir -p "$to/$(dirname "$f")"
    cp -a "$from/$f" "$to/$f"
  done
}
pack build-dev "$P/build" tests/gpu/tpcomm_gpu_tests tools/tpcomm bench/tpcomm-bench \
  bench/tpcomm-bench-fused bench/tpcomm-enqueue-cost src/libtpcomm.so src/libtpcomm.so.0.3 \
  "$(cd build-dev && ls src/libtpcomm.so.*.*.*)"
git log -1 --format='%h %s' >"$P/build/COMMIT"
if [ -z "${TPCOMM_NO_TRACE:-}" ]; then
  pack build-trace "$P/build-trace" bench/trace-oneshot bench/tpcomm-bench-fused
fi
if [ -n "${TPCOMM_AB_TREE:-}" ]; then
  pack "$TPCOMM_AB_TREE/build-dev" "$P/build-ab" bench/tpcomm-bench bench/tpcomm-bench-fused
  git -C "$TPCOMM_AB_TREE" log -1 --format='%h %s' >"$P/build-ab/COMMIT"
fi
find "$P" -type f \( -perm -u+x -o -name '*.so.*' \) -exec strip --strip-unneeded {} +
# Every binary links the whole library statically (about 15 MiB of kernel images each): xz -9's
# 64 MiB dictionary, one thread, finds each image again in the next binary (an A/B pack: 77 MiB at
# xz's default level, 23 MiB at -9), where the default's 8 MiB window cannot.
XZ_OPT=-9 tar -C gpu-carry -cJf gpu-carry/pack.tar.xz pack
size=$(stat -c %s gpu-carry/pack.tar.xz)
echo "gpu-carry/pack.tar.xz: $((size / 1024 / 1024)) MiB of 64 ($(cat "$P/build/COMMIT"))"
[ "$size" -lt $((64 * 1024 * 1024)) ] || { echo "too big to carry: drop the trace or A/B build" >&2; exit 1; }
