#!/usr/bin/env bash
# The test command (README, .ci/run): checks the C++/CUDA formatting, builds the full fat binary
# (sm_75..sm_120 + PTX) with the tests, then runs every test that needs no GPU: the C++ CPU suite
# (policy, validation, bootstrap, inspector with nvcc-built fixtures, topology, tuning tables,
# doctor, tune) and the Python package's CPU tests, then the same Python tests against the binary
# wheel made from that build and installed into a clean venv, and the vLLM / SGLang contract tests
# (scripts/engine_contract.sh); then the C++ CPU suite under ASan+UBSan and a short fuzzing run of
# the parsers (tests/fuzz). The GPU suite is tests/gpu/run_suite.sh, on a GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${TPCOMM_BUILD_DIR:-build}
JOBS=${TPCOMM_JOBS:-$(nproc)}

echo "== build prerequisites"
scripts/install_deps.sh

# The contract tests' venv (~1.2 GB of wheels, mostly download and unpacking) is built in the
# background while the compiler has the cores; the contract step below waits for it.
CONTRACT_PREP_PID=
if [[ ${TPCOMM_CI_CONTRACT:-1} != 0 ]]; then
  mkdir -p "$BUILD"
  nice -n 10 scripts/engine_contract.sh --prepare >"$BUILD/contract-prepare.log" 2>&1 &
  CONTRACT_PREP_PID=$!
fi

echo "== format (clang-format, .clang-format)"
scripts/check_format.sh

echo "== configure + build ($BUILD, $JOBS jobs; the fat binary takes a few minutes on 2 cores)"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j "$JOBS"

echo "== C++ CPU tests"
ctest --test-dir "$BUILD" -L cpu --output-on-failure -j "$JOBS" | tee "$BUILD/ctest.log"

echo "== Python CPU tests"
python3 -c "import pytest" 2>/dev/null || python3 -m pip install -q pytest
# scikit-build-core writes the wheel metadata checked by test_packaging.py (license fields).
python3 -c "import scikit_build_core" 2>/dev/null || python3 -m pip install -q "scikit-build-core>=0.11"
# mypy checks the package's type hints (test_typing.py).
python3 -c "import mypy" 2>/dev/null || python3 -m pip install -q mypy
TPCOMM_LIBRARY="$PWD/$BUILD/src/libtpcomm.so" TPCOMM_CLI="$PWD/$BUILD/tools/tpcomm" \
  PYTHONPATH="$PWD/python" python3 -m pytest python/tests -q -m "not slow and not gpu"

# ---- The binary wheel (issue 23): made from $BUILD (no second compile), installed into a clean
# venv, and the same Python CPU tests run against it: no PYTHONPATH, no TPCOMM_LIBRARY, tpcomm
# imported from the venv's site-packages (test_binary_wheel.py checks that the package under test
# is the installed one). TPCOMM_CI_WHEEL=0 skips it.
if [[ ${TPCOMM_CI_WHEEL:-1} != 0 ]]; then
  echo "== binary wheel from $BUILD, Python CPU tests against it in a clean venv"
  t0=$SECONDS
  scripts/build_wheel.sh --build "$BUILD" --out "$BUILD/wheel" | tee "$BUILD/wheel.log"
  wheel=$(realpath "$(tail -n 1 "$BUILD/wheel.log")")
  venv=$(realpath -m "$BUILD/wheel-venv")
  repo=$PWD
  python3 -m venv --clear "$venv"  # as a user would: the venv's own pip installs the wheel
  "$venv/bin/python" -m pip install -q "$wheel" pytest
  (cd "$venv" && env -u PYTHONPATH -u TPCOMM_LIBRARY -u TPCOMM_CLI PATH="$venv/bin:$PATH" \
    TPCOMM_TEST_WHEEL="$wheel" TPCOMM_EXPECT_INSTALLED=1 bin/python -m pytest "$repo/python/tests" \
    -q -p no:cacheprovider -m "not slow and not gpu" --rootdir "$repo")
  echo "   wheel step: $((SECONDS - t0)) s ($(du -h "$wheel" | cut -f1) $(basename "$wheel"))"
fi

# The vLLM / SGLang plugins against the real engine wheels in a venv of their own (issue 23);
# TPCOMM_CI_CONTRACT=0 skips it.
if [[ ${TPCOMM_CI_CONTRACT:-1} != 0 ]]; then
  echo "== engine contract tests (scripts/engine_contract.sh)"
  # The background venv build's outcome is only a head start: the script builds what is missing.
  wait "$CONTRACT_PREP_PID" || echo "   (the background venv build failed: $BUILD/contract-prepare.log)"
  cat "$BUILD/contract-prepare.log"
  # The CLI of this build: the collapse tests read its planner through `tpcomm doctor --probe`.
  TPCOMM_CLI="$PWD/$BUILD/tools/tpcomm" scripts/engine_contract.sh
fi

# ---- Sanitizers and fuzzing (issue 18), after the main suite, each in a build folder of its own
# that links the main build's kernels (host code is what they check: TPCOMM_KERNELS_FROM).
# TPCOMM_CI_SANITIZE=0 / TPCOMM_CI_FUZZ=0 skip them; TPCOMM_FUZZ_SECONDS is the fuzzing time per
# target.
SAN_BUILD=${TPCOMM_SAN_BUILD_DIR:-build-asan}
FUZZ_BUILD=${TPCOMM_FUZZ_BUILD_DIR:-build-fuzz}
FUZZ_SECONDS=${TPCOMM_FUZZ_SECONDS:-8}

# Installs the Debian packages that are missing (a fresh CI machine), nothing when all are there.
ensure_packages() {
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  echo "   installing ${missing[*]}"
  local sudo=()
  ((EUID == 0)) || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

if [[ ${TPCOMM_CI_SANITIZE:-1} != 0 ]]; then
  echo "== CPU tests under ASan+UBSan ($SAN_BUILD: g++ -fsanitize=address,undefined; $BUILD's kernels)"
  t0=$SECONDS
  # -O0 -g1 (line tables only): the instrumented suite compiles in a quarter of -O2 -g's time,
  # and the CPU suite runs in seconds either way.
  cmake -S . -B "$SAN_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1 -DNDEBUG" -DTPCOMM_SANITIZE=ON \
    -DTPCOMM_KERNELS_FROM="$PWD/$BUILD" -DTPCOMM_BUILD_BENCH=OFF -DTPCOMM_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$SAN_BUILD" --target tpcomm_cpu_tests -j "$JOBS"
  ctest --test-dir "$SAN_BUILD" -L cpu --output-on-failure -j "$JOBS" | tee "$SAN_BUILD/ctest.log"
  echo "   ASan+UBSan step: $((SECONDS - t0)) s"
fi

if [[ ${TPCOMM_CI_FUZZ:-1} != 0 ]]; then
  echo "== fuzz ($FUZZ_SECONDS s per target; $FUZZ_BUILD: clang + libFuzzer, ASan+UBSan)"
  t0=$SECONDS
  ensure_packages clang
  ensure_packages "libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
  cmake -S . -B "$FUZZ_BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
    -DTPCOMM_FUZZ=ON -DTPCOMM_KERNELS_FROM="$PWD/$BUILD" -DTPCOMM_BUILD_TESTS=OFF -DTPCOMM_BUILD_BENCH=OFF \
    -DTPCOMM_BUILD_EXAMPLES=OFF -DTPCOMM_BUILD_TOOLS=OFF >/dev/null
  cmake --build "$FUZZ_BUILD" --target tpcomm_fuzzers -j "$JOBS"
  tests/fuzz/run.sh "$FUZZ_BUILD" "$FUZZ_SECONDS"
  echo "   fuzz step: $((SECONDS - t0)) s"
fi

echo "== summary"
echo "   C++ CPU tests: $(grep -m1 'tests passed' "$BUILD/ctest.log")"
if [[ ${TPCOMM_CI_SANITIZE:-1} != 0 ]]; then
  echo "   under ASan+UBSan: $(grep -m1 'tests passed' "$SAN_BUILD/ctest.log")"
fi
