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

# libcrypto's headers (HMAC-SHA256 of the rendezvous handshake): Debian/Ubuntu libssl-dev.
if ! echo '#include <openssl/hmac.h>' | ${CXX:-c++} -x c++ -fsyntax-only - 2>/dev/null; then
  echo "== installing libssl-dev (OpenSSL libcrypto headers)"
  apt-get update -qq && apt-get install -y --no-install-recommends libssl-dev
fi

echo "== format (clang-format, .clang-format)"
scripts/check_format.sh

echo "== configure + build ($BUILD, $JOBS jobs; the fat binary takes a few minutes on 2 cores)"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j "$JOBS"

echo "== C++ CPU tests"
ctest --test-dir "$BUILD" -L cpu --output-on-failure -j "$JOBS"

echo "== Python CPU tests"
python3 -c "import pytest" 2>/dev/null || python3 -m pip install -q pytest
TPCOMM_LIBRARY="$PWD/$BUILD/src/libtpcomm.so" TPCOMM_CLI="$PWD/$BUILD/tools/tpcomm" \
  PYTHONPATH="$PWD/python" python3 -m pytest python/tests -q -m "not slow and not gpu"
