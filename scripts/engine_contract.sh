#!/usr/bin/env bash
# Contract tests of tpcomm's vLLM and SGLang plugins against the real engine wheels (issue 23):
# an isolated venv with the pinned vllm and sglang wheels, torch, and only the packages their
# modules under test import (--no-deps: their full dependency sets pull GPU kernels and
# gigabytes), tpcomm's Python package with the entry points pyproject.toml declares, then
# python/tests/test_contract_*.py. Fails if the venv cannot be built or an engine module cannot
# be imported (TPCOMM_CONTRACT=1). No GPU needed.
#
# PyPI has no CPU-only torch for Linux: the CUDA wheel is used, its CUDA libraries taken from
# the CUDA toolkit (/usr/local/cuda) except the few the toolkit lacks or has too old (cufile,
# cusparseLt, nvshmem, NCCL), which come as their wheels. Downloads are cached in
# $TPCOMM_CONTRACT_CACHE (default ~/.cache/tpcomm-contract, ~1.2 GB) and the venv is reused
# while the pins are unchanged ($TPCOMM_CONTRACT_VENV, default build-contract/venv).
#   scripts/engine_contract.sh [--prepare]   (--prepare: build the venv only; scripts/test.sh runs
#                                             it in the background, beside the compile)
set -euo pipefail
cd "$(dirname "$0")/.."

VLLM=0.34.0
SGLANG=0.5.23
TORCH=2.14.1 # sglang 0.5.23 pins it; vllm 0.34.0 asks for 2.14.0, same ABI for what is tested
CUDA_LIB_WHEELS=(nvidia-cusparselt-cu13==0.8.1 nvidia-nvshmem-cu13==3.4.5 "nvidia-cufile==1.15.*"
  nvidia-nccl-cu13==2.30.7)
# Imported by the engines but depending on torch or GPU packages themselves: --no-deps too.
NO_DEPS_WHEELS=("triton~=3.8.0" torchvision==0.29.0 xgrammar==0.2.8 "llguidance>=1.7.0,<1.8.0")
# What the modules under test import (found by importing them), with the engines' own bounds
# (transformers: the version SGLang pins, inside vLLM's range).
IMPORT_DEPS=(numpy packaging transformers==5.19.0 huggingface_hub tokenizers safetensors
  regex cachetools psutil sentencepiece requests tqdm blake3 py-cpuinfo protobuf
  "fastapi>=0.133,<0.137" aiohttp openai pydantic orjson prometheus_client pillow
  prometheus-fastapi-instrumentator tiktoken partial-json-parser jsonschema pyzmq msgspec pyyaml
  einops cloudpickle watchfiles python-json-logger pybase64 cbor2 ijson setproctitle
  openai-harmony anthropic opentelemetry-sdk opentelemetry-api lark uvloop apache-tvm-ffi==0.1.11
  dill ipython typing_extensions sympy networkx jinja2 fsspec filelock pytest)

CACHE=${TPCOMM_CONTRACT_CACHE:-$HOME/.cache/tpcomm-contract}
VENV=${TPCOMM_CONTRACT_VENV:-build-contract/venv}
PY=python3
STAMP="vllm=$VLLM sglang=$SGLANG torch=$TORCH ${CUDA_LIB_WHEELS[*]} ${NO_DEPS_WHEELS[*]}
${IMPORT_DEPS[*]}"
t0=$SECONDS

if [[ ! -x $VENV/bin/python || "$(cat "$VENV/.tpcomm-stamp" 2>/dev/null)" != "$STAMP" ]]; then
  echo "== contract venv: $VENV (cache $CACHE)"
  rm -rf "$VENV"
  $PY -m venv "$VENV"
  mkdir -p "$CACHE"
  # The big wheels once into the cache; pip skips a file that is already there.
  $PY -m pip download -q --no-deps -d "$CACHE" "torch==$TORCH" "vllm==$VLLM" "sglang==$SGLANG" \
    "${CUDA_LIB_WHEELS[@]}" "${NO_DEPS_WHEELS[@]}"
  # --no-compile: byte-compiling torch and the engines costs more than the tests import.
  "$VENV/bin/pip" install -q --no-compile --no-deps --find-links "$CACHE" --no-index \
    "torch==$TORCH" "vllm==$VLLM" "sglang==$SGLANG" "${CUDA_LIB_WHEELS[@]}" "${NO_DEPS_WHEELS[@]}"
  "$VENV/bin/pip" install -q --no-compile "${IMPORT_DEPS[@]}"
  echo "$STAMP" >"$VENV/.tpcomm-stamp"
fi

if [[ ${1:-} == --prepare ]]; then
  echo "   venv ready after $((SECONDS - t0)) s (prepared only)"
  exit 0
fi

# tpcomm from this checkout, without building the library (the plugins' code paths tested here
# need none): a .pth for the package and a dist-info carrying pyproject.toml's entry points,
# which is how the engines' loaders find plugins.
SITE=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
"$VENV/bin/python" - "$SITE" "$PWD" <<'EOF'
import pathlib, re, shutil, sys, tomllib
site, root = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
version = re.search(r"project\(tpcomm VERSION ([0-9.]+)", (root / "CMakeLists.txt").read_text())[1]
for old in site.glob("tpcomm-*.dist-info"):
    shutil.rmtree(old)
info = site / f"tpcomm-{version}.dist-info"
info.mkdir()
(info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: tpcomm\nVersion: {version}\n")
(info / "entry_points.txt").write_text("".join(
    f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
    for group, eps in project["entry-points"].items()))
(site / "tpcomm-checkout.pth").write_text(str(root / "python") + "\n")
EOF

# torch's CUDA libraries: the wheels' (nvidia/*/lib) first, then the toolkit's.
NV_LIBS=$(ls -d "$SITE"/nvidia/*/lib "$SITE"/nvidia/cu13/lib 2>/dev/null | tr '\n' ':')
export LD_LIBRARY_PATH="${NV_LIBS}/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
echo "   venv ready after $((SECONDS - t0)) s"

echo "== contract tests: vLLM $VLLM, SGLang $SGLANG (python/tests/test_contract_*.py)"
TPCOMM_CONTRACT=1 TPCOMM_CONTRACT_VLLM=$VLLM TPCOMM_CONTRACT_SGLANG=$SGLANG \
  "$VENV/bin/python" -m pytest -q -p no:cacheprovider python/tests/test_contract_vllm.py \
  python/tests/test_contract_sglang.py
echo "   contract step: $((SECONDS - t0)) s"
