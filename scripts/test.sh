#!/usr/bin/env bash
# The test command (README, .ci/run): checks the C++/CUDA formatting, builds the full fat binary
# (sm_75..sm_120 + PTX) with the tests, then runs every test that needs no GPU: the C++ CPU suite
# (policy, validation, bootstrap, inspector with nvcc-built fixtures, topology, tuning tables,
# doctor, tune) and the Python package's CPU tests. The GPU suite is tests/gpu/run_suite.sh, on a
# GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${TPCOMM_BUILD_DIR:-build}
JOBS=${TPCOMM_JOBS:-$(nproc)}

echo "== build prerequisites"
scripts/install_deps.sh

echo "== format (clang-format, .clang-format)"
scripts/check_format.sh

echo "== configure + build ($BUILD, $JOBS jobs; the fat binary takes a few minutes on 2 cores)"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j "$JOBS"

echo "== C++ CPU tests"
ctest --test-dir "$BUILD" -L cpu --output-on-failure -j "$JOBS"

echo "== Python CPU tests"
python3 -c "import pytest" 2>/dev/null || python3 -m pip install -q pytest
# scikit-build-core writes the wheel metadata checked by test_packaging.py (license fields).
python3 -c "import scikit_build_core" 2>/dev/null || python3 -m pip install -q "scikit-build-core>=0.11"
# mypy checks the package's type hints (test_typing.py).
python3 -c "import mypy" 2>/dev/null || python3 -m pip install -q mypy
TPCOMM_LIBRARY="$PWD/$BUILD/src/libtpcomm.so" TPCOMM_CLI="$PWD/$BUILD/tools/tpcomm" \
  PYTHONPATH="$PWD/python" python3 -m pytest python/tests -q -m "not slow and not gpu"
