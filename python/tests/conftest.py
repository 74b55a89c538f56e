"""pytest setup for python/tests.

- The package under test is the installed `tpcomm` if there is one, else python/ of this
  checkout (with TPCOMM_LIBRARY or a build*/ tree providing libtpcomm.so).
- NVLink multicast stays off (set before anything imports torch).
- `slow` tests (building a wheel) run only with --run-slow; GPU tests skip themselves when torch
  or two GPUs are missing.
"""
import importlib
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

for key, value in {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                   "NVSHMEM_DISABLE_NVLS": "1"}.items():
    os.environ.setdefault(key, value)

try:
    importlib.import_module("tpcomm")  # only whether one is installed (a wheel)
except ImportError:
    sys.path.insert(0, os.path.join(REPO, "python"))
    # Spawned GPU test workers inherit sys.path from multiprocessing, subprocesses from here.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(REPO, "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p])


@pytest.fixture(scope="session")
def library_or_skip():
    """The loaded library's path; skips when no libtpcomm.so (and CLI) can be found."""
    import tpcomm

    try:
        path = tpcomm.library_path()
        tpcomm._loader.cli_path()
    except tpcomm.TpcommLibraryNotFoundError as e:
        pytest.skip(f"no libtpcomm.so / tpcomm CLI: {e}")
    return path


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run slow tests (builds a wheel: minutes)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow (builds a wheel); run with --run-slow or set "
                                   "TPCOMM_TEST_WHEEL=path/to.whl to check a built wheel")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
